package clitest_test

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/countersign/countersign/agent/agenttest"
	"github.com/countersign/countersign/agent/clitest"
)

// claudeCommand is a headless Claude Code run against srv: prompt, stream-json
// output, and args.
func claudeCommand(t *testing.T, srv *agenttest.Server, prompt string, args ...string) clitest.Command {
	t.Helper()
	bin := clitest.Find(t, clitest.ClaudeCode)
	args = append([]string{"-p", prompt, "--output-format", "stream-json", "--verbose"}, args...)
	return clitest.Command{Bin: bin, Args: args, Env: clitest.ClaudeEnv(srv.URL)}
}

// claude runs it to its end, within a deadline.
func claude(t *testing.T, srv *agenttest.Server, prompt string, args ...string) clitest.Result {
	t.Helper()
	c := claudeCommand(t, srv, prompt, args...)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	return clitest.Run(t, ctx, c)
}

// Claude Code, offline against the model test server, gets the scripted answer
// in one streamed request carrying the test key, and nothing else is asked.
func TestClaudeCodeGetsTheScriptedAnswer(t *testing.T) {
	t.Parallel()
	srv := agenttest.NewServer(t, agenttest.Message("end_turn", "FAKE-DONE"))
	r := claude(t, srv, "say done")
	final, _ := r.Final()
	if _, ok := r.Init(); !r.Succeeded() || !ok || final.Result != "FAKE-DONE" || final.Subtype != "success" {
		t.Fatalf("want an init event and the result FAKE-DONE: %s", r.Summary())
	}
	reqs := srv.Requests()
	if len(reqs) != 1 {
		t.Fatalf("requests = %d, want 1", len(reqs))
	}
	if q := reqs[0]; q.Format != agenttest.Anthropic || !q.Streamed || q.Header.Get("X-Api-Key") != clitest.TestAPIKey {
		t.Errorf("request: %s streamed %v key %q; want a streamed Messages request with the test key", q.Path, q.Streamed, q.Header.Get("X-Api-Key"))
	}
}

// A script reads the tool result Claude Code sends back and answers from it.
func TestClaudeCodeSendsTheToolResultBack(t *testing.T) {
	t.Parallel()
	file := filepath.Join(t.TempDir(), "note.txt")
	if err := os.WriteFile(file, []byte("the word is heron\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	in, _ := json.Marshal(map[string]string{"file_path": file})
	srv := agenttest.NewServerFunc(t, func(req agenttest.Request) agenttest.Reply {
		res, ok := req.LastResult()
		if !ok {
			return agenttest.Message("tool_use", "", agenttest.Call("Read", string(in)))
		}
		return agenttest.Message("end_turn", "read: "+strings.Fields(res.Content)[len(strings.Fields(res.Content))-2])
	})
	r := claude(t, srv, "read the note", "--allowedTools", "Read")
	final, _ := r.Final()
	if !r.Succeeded() || final.Result != "read: heron" || len(r.ToolUses()) != 1 || len(r.ToolResults()) != 1 {
		t.Fatalf("want one Read, its result, and the answer made from it: %s", r.Summary())
	}
	if got := r.ToolResults()[0].ResultText(); !strings.Contains(got, "heron") || r.ToolResults()[0].IsError {
		t.Errorf("tool result event = %q, want the file", got)
	}
}

// With its retries off, Claude Code asks once, and a run that failed says so by
// is_error and exit code 1 (under the subtype "success" in 2.1.328): Succeeded
// goes by those two.
func TestAnOverloadIsAFailureWhateverTheSubtype(t *testing.T) {
	t.Parallel()
	srv := agenttest.NewServer(t, agenttest.Fail(agenttest.Overload))
	r := claude(t, srv, "say done")
	final, ok := r.Final()
	if r.Succeeded() || !ok || !final.IsError || r.ExitCode != 1 || final.APIErrorStatus != 529 {
		t.Fatalf("want a failed run with exit 1 and api_error_status 529: %s", r.Summary())
	}
	if n := len(srv.Requests()); n != 1 {
		t.Errorf("requests = %d, want 1 (CLAUDE_CODE_MAX_RETRIES=0)", n)
	}
}

// Stop ends a run that waits on a model that never answers: the events so far
// are there to watch, and the process group goes at once.
func TestStopEndsAHungRun(t *testing.T) {
	t.Parallel()
	srv := agenttest.NewServer(t, agenttest.Message("end_turn", "never").HangFor(0))
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	p := clitest.Start(t, ctx, claudeCommand(t, srv, "say done"))
	if _, err := p.WaitEvent(ctx, func(evs []clitest.Event) bool { return len(evs) > 0 && evs[0].Subtype == "init" }); err != nil {
		t.Fatalf("waiting for the init event: %v", err)
	}
	waitRequest(t, ctx, srv)
	start := time.Now()
	p.Stop()
	r := p.Wait()
	if r.ExitCode != -1 || time.Since(start) > 5*time.Second {
		t.Errorf("after Stop: %s after %v; want killed at once", r.Summary(), time.Since(start))
	}
	if _, ok := r.Final(); ok {
		t.Errorf("a killed run has a result event: %s", r.Summary())
	}
}

// waitRequest waits until srv has a request.
func waitRequest(t *testing.T, ctx context.Context, srv *agenttest.Server) {
	t.Helper()
	for len(srv.Requests()) == 0 {
		select {
		case <-ctx.Done():
			t.Fatal("no request reached the model server")
		case <-time.After(10 * time.Millisecond): // polling another process's progress
		}
	}
}
