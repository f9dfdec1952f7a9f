package clitest_test

import (
	"context"
	"encoding/json"
	"log"
	"os"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/countersign/countersign/agent/agenttest"
	"github.com/countersign/countersign/agent/clitest"
)

// serveEnv, set, makes the test binary an MCP server over stdio with one tool,
// echo, for Codex to start: an MCP server that is nobody's but this test's.
const serveEnv = "CLITEST_SERVE_ECHO"

func TestMain(m *testing.M) {
	if os.Getenv(serveEnv) == "1" {
		serveEcho()
		return
	}
	os.Exit(m.Run())
}

type echoIn struct {
	Text string `json:"text" jsonschema:"the text to echo back"`
}

type echoOut struct {
	Echo string `json:"echo"`
	// Calls counts the calls this server answered: a repeated call shows.
	Calls int `json:"calls"`
}

func serveEcho() {
	s := mcp.NewServer(&mcp.Implementation{Name: "echo", Version: "0.1.0"}, nil)
	calls := 0
	mcp.AddTool(s, &mcp.Tool{Name: "echo", Description: "Echo text back"},
		func(_ context.Context, _ *mcp.CallToolRequest, in echoIn) (*mcp.CallToolResult, echoOut, error) {
			calls++
			return nil, echoOut{Echo: in.Text, Calls: calls}, nil
		})
	if err := s.Run(context.Background(), &mcp.StdioTransport{}); err != nil {
		log.Fatal(err)
	}
}

// echoServer is the test binary as Codex's MCP server "echo".
func echoServer(t *testing.T) clitest.CodexMCP {
	t.Helper()
	script := t.TempDir() + "/echo-mcp"
	self, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(script, []byte("#!/bin/sh\n"+serveEnv+"=1 exec '"+self+"'\n"), 0o700); err != nil {
		t.Fatal(err)
	}
	return clitest.CodexMCP{Name: "echo", Command: script}
}

// codex runs Codex headless against home (from CodexHome) to its end, within
// a deadline: prompt in a new thread, or in thread when it is not "".
func codex(t *testing.T, home, thread, prompt string) clitest.CodexRun {
	t.Helper()
	bin := clitest.Find(t, clitest.Codex)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	return clitest.Run(t, ctx, clitest.Command{Bin: bin, Args: clitest.CodexArgs(thread, prompt), Env: clitest.CodexEnv(home)}).Codex()
}

// Codex, offline against the model test server, gets the scripted answer in
// one streamed Responses request carrying the test key, with none of the
// host's tools (no shell, no files, no web) on offer.
func TestCodexGetsTheScriptedAnswer(t *testing.T) {
	t.Parallel()
	srv := agenttest.NewServer(t, agenttest.Message("end_turn", "FAKE-DONE"))
	r := codex(t, clitest.CodexHome(t, srv.URL), "", "say done")
	if !r.Succeeded() || r.Text() != "FAKE-DONE" || r.ThreadID() == "" {
		t.Fatalf("want a thread and the answer FAKE-DONE: %s", r.Summary())
	}
	reqs := srv.Requests()
	if len(reqs) != 1 {
		t.Fatalf("requests = %d, want 1", len(reqs))
	}
	q := reqs[0]
	if q.Format != agenttest.Responses || !q.Streamed || q.Header.Get("Authorization") != "Bearer "+clitest.TestAPIKey ||
		q.Header.Get("Thread-Id") != r.ThreadID() {
		t.Errorf("request: %s streamed %v, headers %v; want a streamed Responses request with the test key, in the thread", q.Path, q.Streamed, q.Header)
	}
	for _, host := range []string{"exec_command", "shell", "apply_patch", "view_image", "web_search", "update_plan"} {
		if slices.Contains(q.Tools, host) {
			t.Errorf("the model is offered %s: %v", host, q.Tools)
		}
	}
}

// Codex calls an MCP tool the script names as Claude Code would
// (mcp__echo__echo), sends its result back, and answers; resumed, the thread
// is the same, its history comes along, and the tool is not called again.
func TestCodexCallsAnMCPToolAndResumesTheThread(t *testing.T) {
	t.Parallel()
	srv := agenttest.NewServerFunc(t, func(req agenttest.Request) agenttest.Reply {
		last, _ := req.LastResult()
		switch req.N {
		case 1:
			return agenttest.Message("tool_use", "", agenttest.Call("mcp__echo__echo", `{"text":"heron"}`))
		case 2:
			return agenttest.Message("end_turn", "echoed")
		}
		return agenttest.Message("end_turn", "again: "+last.UseID) // the resumed thread's history
	})
	home := clitest.CodexHome(t, srv.URL, echoServer(t))
	r := codex(t, home, "", "echo heron")
	calls := r.ToolCalls()
	if !r.Succeeded() || r.Text() != "echoed" || len(calls) != 1 {
		t.Fatalf("want one echo call and the answer: %s", r.Summary())
	}
	var out struct {
		Echo  string
		Calls int
	}
	if c := calls[0]; c.Server != "echo" || c.Tool != "echo" || c.Status != "completed" || c.Result == nil ||
		json.Unmarshal(c.Result.StructuredContent, &out) != nil || out.Echo != "heron" || out.Calls != 1 {
		t.Errorf("tool call %+v, want echo heron answered once", c)
	}
	if last, _ := srv.Requests()[1].LastResult(); last.UseID != "call_01" || !strings.Contains(last.Content, `{"calls":1,"echo":"heron"}`) {
		t.Errorf("result sent back %+v, want call_01 with the structured content", last)
	}

	again := codex(t, home, r.ThreadID(), "once more")
	reqs := srv.Requests()
	if !again.Succeeded() || again.ThreadID() != r.ThreadID() || again.Text() != "again: call_01" || len(again.ToolCalls()) != 0 || len(reqs) != 3 {
		t.Fatalf("resumed: thread %q (want %q), %d requests; want the history answered without a tool: %s",
			again.ThreadID(), r.ThreadID(), len(reqs), again.Summary())
	}
	if !strings.Contains(string(reqs[2].Body), "echo heron") || !strings.Contains(string(reqs[2].Body), "once more") {
		t.Errorf("the resumed request does not carry the first prompt and the new one")
	}
}

// With its retries off, Codex asks once and a failure ends the run: exit 1,
// an error event, and turn.failed with a message (no status: a provider reads
// the kind of failure from the session's record, see agent/cli).
func TestCodexFailsOnceWithItsRetriesOff(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name  string
		reply agenttest.Reply
		said  string
	}{
		{"503 overloaded", agenttest.Fail(agenttest.Overload), "at capacity"},
		{"overloaded inside the stream", agenttest.Message("end_turn", "half an answer").FailAfter(2, agenttest.Overload), "at capacity"},
		{"429", agenttest.RateLimited(time.Second), "429"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			srv := agenttest.NewServer(t, tt.reply)
			r := codex(t, clitest.CodexHome(t, srv.URL), "", "say done")
			failure, failed := r.Failure()
			if r.Succeeded() || r.ExitCode != 1 || !failed || !strings.Contains(failure.Message, tt.said) || r.ThreadID() == "" {
				t.Fatalf("want exit 1 and turn.failed saying %q, in a thread: %s", tt.said, r.Summary())
			}
			if n := len(srv.Requests()); n != 1 {
				t.Errorf("requests = %d, want 1 (request_max_retries and stream_max_retries 0)", n)
			}
		})
	}
}

// Stop ends a Codex run that waits on a model that never answers, at once.
func TestStopEndsAHungCodexRun(t *testing.T) {
	t.Parallel()
	bin := clitest.Find(t, clitest.Codex)
	srv := agenttest.NewServer(t, agenttest.Message("end_turn", "never").HangFor(0))
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	p := clitest.Start(t, ctx, clitest.Command{Bin: bin, Args: clitest.CodexArgs("", "say done"), Env: clitest.CodexEnv(clitest.CodexHome(t, srv.URL))})
	if _, err := p.WaitEvent(ctx, func(evs []clitest.Event) bool {
		return slices.ContainsFunc(evs, func(ev clitest.Event) bool { return ev.Type == "turn.started" })
	}); err != nil {
		t.Fatalf("waiting for the turn to start: %v", err)
	}
	waitRequest(t, ctx, srv)
	start := time.Now()
	p.Stop()
	r := p.Wait().Codex()
	if r.ExitCode != -1 || time.Since(start) > 5*time.Second || r.Succeeded() {
		t.Errorf("after Stop: %s after %v; want killed at once", r.Summary(), time.Since(start))
	}
}
