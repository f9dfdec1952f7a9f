package agent_test

import (
	"context"
	"strings"
	"testing"

	"github.com/countersign/countersign/agent"
	"github.com/countersign/countersign/agent/agenttest"
	"github.com/countersign/countersign/journal"
)

// TestLoopTakesANumericChatID: a model that writes chat_id as a number, as
// Telegram's own API allows, gets its card, not a refusal that ends the turn.
func TestLoopTakesANumericChatID(t *testing.T) {
	r := newLoopRig(t, agent.LoopLimits{}, agenttest.Message("tool_use", "Sending.",
		agenttest.Call("commit_send_message", `{"chat_id":222,"text":"Hello from the bot","parse_mode":null}`)))
	out := r.turn("Send 'Hello from the bot' to 222")
	if got := agent.Path(out.Path); got != "end:awaiting_approval" || len(out.Awaiting) != 1 {
		t.Fatalf("path = %s, awaiting %v; want one commit awaiting approval", got, out.Awaiting)
	}
	op, err := r.j.Operation(context.Background(), out.Awaiting[0])
	if err != nil || op.State != journal.AwaitingApproval || op.Payload.Target != "222" {
		t.Errorf("operation = %+v, %v; want the send to 222 awaiting approval", op, err)
	}
	if _, err := r.op.PendingApproval(context.Background(), op.ID); err != nil {
		t.Errorf("no approval card: %v", err)
	}
}

// TestLoopStopsARefusedCallSentAgainAndSaysWhich: a call refused for its arguments
// and sent again spelt another way is the same call. The turn ends as a doom loop,
// and the chat is told which call repeated.
func TestLoopStopsARefusedCallSentAgainAndSaysWhich(t *testing.T) {
	r := newLoopRig(t, agent.LoopLimits{},
		agenttest.Message("tool_use", "", agenttest.Call("commit_send_message", badChat)),
		agenttest.Message("tool_use", "", agenttest.Call("commit_send_message", `{"text":"Hello from the bot","chat_id":"the team","parse_mode":null}`)),
		agenttest.Message("end_turn", "Gave up."))
	out := r.turn("Send 'Hello from the bot' to the team")
	if got := agent.Path(out.Path); got != "tool_results -> end:doom_loop" {
		t.Errorf("path = %s, want tool_results -> end:doom_loop", got)
	}
	want := `Stopped: possible doom loop: commit_send_message(chat_id: "the team", text: "Hello from the bot")`
	if !strings.HasPrefix(out.Text, want) {
		t.Errorf("text = %q, want it to begin %q", out.Text, want)
	}
	if n := len(r.model.Requests()); n != 2 {
		t.Errorf("model requests = %d, want 2", n)
	}
}
