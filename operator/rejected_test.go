package operator_test

import (
	"context"
	"encoding/json"
	"strings"
	"testing"

	"github.com/countersign/countersign/action"
	"github.com/countersign/countersign/journal"
	"github.com/countersign/countersign/operator"
	"github.com/countersign/countersign/tools"
)

// TestARejectedRequestIsNotAskedAgainUnchanged: a payload a person rejected,
// asked again from the same chat in a new task, is stopped by the verifier with
// the rejection named and no card; from another chat it is asked; with what
// changed stated, it gets a card that shows the change.
func TestARejectedRequestIsNotAskedAgainUnchanged(t *testing.T) {
	t.Parallel()
	h := newHarness(t)
	rec := record(t, h.op, h.j)
	ctx := context.Background()
	_, first := h.send("222", "The launch is on Monday.")
	if r, err := h.op.Decide(ctx, h.approval(first), approverID, false); err != nil || r.Cause != action.CauseRejected {
		t.Fatalf("rejection = %+v, %v", r, err)
	}
	call := func(chat string, args string) action.Result {
		t.Helper()
		task, err := h.op.StartTask(ctx, journal.Task{Requester: operatorID, Chat: chat, Summary: "send"})
		if err != nil {
			t.Fatal(err)
		}
		r, err := h.op.Call(ctx, task.ID, operator.Call{Tool: "commit_send_message", Args: json.RawMessage(args)})
		if err != nil {
			t.Fatal(err)
		}
		return r
	}
	asked := func(opID string) bool {
		for _, e := range rec.events() {
			if e.Kind == operator.ApprovalNeeded && e.Operation.ID == opID {
				return true
			}
		}
		return false
	}

	again := call("1", `{"chat_id": "222", "text": "the launch is on\u200b Monday."}`)
	if again.Status != action.StatusTerminal || again.NextAction != action.NextStop ||
		!strings.Contains(again.Reason, "a person rejected this same request as operation "+first) || !strings.Contains(again.Reason, `"changed"`) {
		t.Fatalf("asked again unchanged = %+v; want stopped, naming the rejection of %s and the way to ask again", again, first)
	}
	if asked(again.OperationID) || h.state(again.OperationID) != journal.Failed {
		t.Errorf("asked again unchanged: a card was asked (%v), state %s; want none, failed", asked(again.OperationID), h.state(again.OperationID))
	}

	other := call("5", `{"chat_id": "222", "text": "The launch is on Monday."}`)
	if other.Status != action.StatusPending || !asked(other.OperationID) {
		t.Fatalf("the same from another chat = %+v; want a card", other)
	}
	if _, err := h.op.Decide(ctx, h.approval(other.OperationID), approverID, false); err != nil { // else a duplicate below
		t.Fatal(err)
	}

	changed := call("1", `{"chat_id": "222", "text": "The launch is on Monday.", "changed": "the person asked to post it after all"}`)
	if changed.Status != action.StatusPending || !asked(changed.OperationID) {
		t.Fatalf("asked again with what changed = %+v; want a card", changed)
	}
	op, err := h.j.Operation(ctx, changed.OperationID)
	if err != nil {
		t.Fatal(err)
	}
	reg := mustRegistry(t, h)
	tool, _ := reg.Get("commit_send_message")
	shown := tools.ShowOf(tool, op.Payload)
	if op.Payload.Changed != "the person asked to post it after all" || len(shown.Facts) == 0 ||
		!strings.Contains(shown.Facts[len(shown.Facts)-1], "What changed, as the request says: the person asked to post it after all") {
		t.Errorf("payload = %+v, facts %q; want the change carried and shown", op.Payload, shown.Facts)
	}
}

// TestAnApproversEditIsNotHeldBackByARejection: an approver who edits a
// request to the text a person rejected writes it themselves: the edit is
// verified and asked, not stopped as a request asked again.
func TestAnApproversEditIsNotHeldBackByARejection(t *testing.T) {
	t.Parallel()
	h := newHarness(t)
	ctx := context.Background()
	_, first := h.send("222", "The launch is on Monday.")
	if _, err := h.op.Decide(ctx, h.approval(first), approverID, false); err != nil {
		t.Fatal(err)
	}
	_, second := h.send("222", "The launch is on Tuesday.")
	ed, err := h.op.Edit(ctx, h.approval(second), approverID, "The launch is on Monday.")
	if err != nil || ed.Approval.Decision != journal.Pending {
		t.Fatalf("an approver's edit to the rejected text = %+v, %v; want a new card", ed, err)
	}
}
