package main

import (
	"context"
	"encoding/json"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/countersign/countersign/agent/agenttest"
	"github.com/countersign/countersign/agent/cli"
	"github.com/countersign/countersign/agent/clitest"
	"github.com/countersign/countersign/telegram/telegramtest"
)

// Codex, a real outside agent, sends a message through countersign mcp beside a
// running bot, and the model is overloaded after the commit came back pending:
// the run fails (Codex's retries are off), and is resumed in its thread with
// the continuation prompt, as the coordinator does. The resumed run does not
// send again: it awaits the outcome of the send it made, which the tap
// approved. The next message resumes the same thread. One delivery.
func TestCodexSendsThroughBotMCPAndResumesAfterAnOverload(t *testing.T) {
	t.Parallel()
	if testing.Short() {
		t.Skip("starts child processes")
	}
	codex := clitest.Find(t, clitest.Codex)
	srv := telegramtest.NewServer(t, telegramtest.Options{Token: childToken})
	data, logs, wait := childData(t, srv)
	bot := startBot(t, srv, data)
	wait("the first poll", func(s *telegramtest.Server) bool { return s.Polling() })

	const text = "hello from Codex"
	var overloaded atomic.Bool
	script := sendThenAwait("222", text)
	model := agenttest.NewServerFunc(t, func(req agenttest.Request) agenttest.Reply {
		if last, ok := req.LastResult(); ok && readResult(last.Content).Status == "pending" && !overloaded.Swap(true) {
			return agenttest.Fail(agenttest.Overload)
		}
		return script(req)
	})
	home := clitest.CodexHome(t, model.URL, clitest.CodexMCP{Name: "countersign", Command: botMCP(t, data)})
	run := func(thread, prompt string) clitest.CodexRun {
		t.Helper()
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		defer cancel()
		return clitest.Run(t, ctx, clitest.Command{Bin: codex, Args: clitest.CodexArgs(thread, prompt), Env: clitest.CodexEnv(home)}).Codex()
	}

	first := run("", "Send hello to chat 222.")
	if f, failed := first.Failure(); first.Succeeded() || !failed || !strings.Contains(f.Message, "capacity") || first.ThreadID() == "" {
		t.Fatalf("first run: want it failed on the overload, in a thread: %s\nbot log:\n%s", first.Summary(), logs())
	}
	calls := first.ToolCalls()
	if len(calls) != 1 || calls[0].Tool != "commit_send_message" || calls[0].Server != "countersign" || calls[0].Result == nil {
		t.Fatalf("first run's tool calls %+v, want one commit_send_message", calls)
	}
	var pending toolResult
	json.Unmarshal(calls[0].Result.StructuredContent, &pending)
	opID := pending.OperationID
	card := approveCard(srv, wait)
	if pending.Status != "pending" || opID == "" || !strings.Contains(card.Text, opID) || !strings.Contains(card.Text, text) {
		t.Fatalf("commit result %s, card %q; want pending with the card's operation", calls[0].Result.StructuredContent, card.Text)
	}

	resumed := run(first.ThreadID(), cli.ContinuationPrompt)
	if !resumed.Succeeded() || resumed.ThreadID() != first.ThreadID() {
		t.Fatalf("resumed run: want it done in thread %s: %s\nbot log:\n%s", first.ThreadID(), resumed.Summary(), logs())
	}
	calls = resumed.ToolCalls()
	var outcome toolResult
	if len(calls) == 1 {
		json.Unmarshal(calls[0].Result.StructuredContent, &outcome)
	}
	if len(calls) != 1 || calls[0].Tool != "await_outcome" || outcome.OperationID != opID || outcome.Status != "succeeded" {
		t.Errorf("resumed run's tool calls %+v; want only await_outcome, seeing %s succeed", calls, opID)
	}
	reqs := model.Requests()
	if body := string(reqs[len(reqs)-2].Body); !strings.Contains(body, cli.ContinuationPrompt) || !strings.Contains(body, "Send hello to chat 222.") {
		t.Errorf("the resumed request does not carry the thread's history and the continuation prompt")
	}

	next := run(first.ThreadID(), "Thanks. Anything else?")
	if !next.Succeeded() || next.ThreadID() != first.ThreadID() || len(next.ToolCalls()) != 0 || !strings.HasPrefix(next.Text(), "Outcome: ") {
		t.Errorf("next message: want it answered in thread %s without a tool: %s", first.ThreadID(), next.Summary())
	}

	deliveredOnce(t, srv, bot, data, logs, wait, opID, text)
}
