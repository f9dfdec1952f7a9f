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

// The history hands the verifier each earlier text with its parse mode, so that
// markup the recipient never sees does not make a resend new: "<b>Weekly</b>
// digest" in HTML and "Weekly digest" in plain text read the same.
func TestVerifierReadsAnEarlierTextInItsParseMode(t *testing.T) {
	t.Parallel()
	h := verifying(t)
	ctx := context.Background()
	html, _ := json.Marshal(tools.SendArgs{ChatID: "222", Text: "<b>Weekly</b> digest is out", ParseMode: "HTML"})
	task, _ := h.op.StartTask(ctx, journal.Task{Requester: operatorID, Chat: "1", Summary: "in bold"})
	first, err := h.op.Call(ctx, task.ID, operator.Call{Tool: "commit_send_message", Args: html})
	if err != nil || first.Status != action.StatusPending {
		t.Fatalf("first = %+v, %v; want pending", first, err)
	}
	again, _ := h.op.StartTask(ctx, journal.Task{Requester: operatorID, Chat: "1", Summary: "plain"})
	r, err := h.op.Call(ctx, again.ID, callSend("222", "Weekly digest is out"))
	if err != nil {
		t.Fatal(err)
	}
	if r.NextAction != action.NextStop || !strings.Contains(r.Reason, first.OperationID) {
		t.Errorf("the same words in plain text = %+v, want a stop naming %s", r, first.OperationID)
	}
}
