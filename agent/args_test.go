package agent_test

import (
	"context"
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
