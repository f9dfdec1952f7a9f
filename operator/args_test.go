package operator_test

import (
	"context"
	"encoding/json"
	"strings"
	"testing"

	"github.com/countersign/countersign/action"
	"github.com/countersign/countersign/journal"
	"github.com/countersign/countersign/operator"
)

func newTask(t *testing.T, h *harness) string {
	t.Helper()
	task, err := h.op.StartTask(context.Background(), journal.Task{Requester: operatorID, Chat: "1", Summary: "args"})
	if err != nil {
		t.Fatal(err)
	}
	return task.ID
}

func rawCall(tool, args string) operator.Call {
	return operator.Call{Tool: tool, Args: json.RawMessage(args)}
}

// TestArgumentsAsModelsSendThemReachTheCard: a numeric chat_id, a null parse_mode and
// a key of the model's own make the same card as the call written by the book.
func TestArgumentsAsModelsSendThemReachTheCard(t *testing.T) {
	t.Parallel()
	h := newHarness(t)
	ctx := context.Background()
	for _, c := range []operator.Call{
		rawCall("commit_send_message", `{"chat_id":222,"text":"hello","parse_mode":null,"disable_notification":true}`),
		rawCall("commit_publish_post", `{"chat_id":-1001234567890,"text":"post"}`),
	} {
		r, err := h.op.Call(ctx, newTask(t, h), c)
		if err != nil || r.Status != action.StatusPending {
			t.Fatalf("%s %s = %+v, %v; want pending", c.Tool, c.Args, r, err)
		}
		op, err := h.j.Operation(ctx, r.OperationID)
		if err != nil || op.State != journal.AwaitingApproval {
			t.Fatalf("operation = %+v, %v; want awaiting approval", op, err)
		}
		if want := map[string]string{"commit_send_message": "222", "commit_publish_post": "-1001234567890"}[c.Tool]; op.Payload.Target != want {
			t.Errorf("%s target = %q, want %q", c.Tool, op.Payload.Target, want)
		}
		h.approval(r.OperationID)
	}
}

// TestRefusedArgumentsSpendTheRepairBudget: refused arguments are a repair like any
// other, paid in the move that records the refusal; past the budget the call stops.
func TestRefusedArgumentsSpendTheRepairBudget(t *testing.T) {
	t.Parallel()
	h := newHarness(t) // repair_budget: 1
	ctx := context.Background()
	taskID := newTask(t, h)
	r, err := h.op.Call(ctx, taskID, rawCall("commit_send_message", `{"chat_id":1.5,"text":"hello"}`))
	if err != nil || r.Status != action.StatusRepairable || !strings.Contains(r.Reason, "chat_id") {
		t.Fatalf("first refusal = %+v, %v; want repairable naming chat_id", r, err)
	}
	task, _ := h.j.Task(ctx, taskID)
	if task.RepairsUsed != 1 {
		t.Errorf("repairs used = %d, want 1", task.RepairsUsed)
	}
	r, err = h.op.Call(ctx, taskID, rawCall("commit_send_message", `{"chat_id":"the team","text":"hello"}`))
	if err != nil {
		t.Fatal(err)
	}
	if r.Status != action.StatusTerminal || r.Cause != action.CauseBudget || !strings.Contains(r.Reason, "repair budget spent") ||
		!strings.Contains(r.Reason, "the team") {
		t.Errorf("second refusal = %+v, want a budget stop that says what was refused", r)
	}
	if p := h.states(r.OperationID); fmtStates(p) != fmtStates([]journal.State{P, F}) {
		t.Errorf("path = %v, want [prepared failed]", p)
	}
	if task, _ := h.j.Task(ctx, taskID); task.RepairsUsed != 1 {
		t.Errorf("repairs used = %d, want still 1", task.RepairsUsed)
	}
}
