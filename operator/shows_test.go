package operator_test

import (
	"context"
	"errors"
	"slices"
	"strings"
	"testing"

	"github.com/countersign/countersign/action"
	"github.com/countersign/countersign/internal/wiring"
	"github.com/countersign/countersign/journal"
	"github.com/countersign/countersign/operator"
)

// A payload the review page would show less of (Options.Shows refuses it) is
// stopped before anyone is asked: no approval, nothing sent, the reason in the
// result; a payload the page shows is asked as ever.
func TestAPayloadThePageCannotShowIsNeverAsked(t *testing.T) {
	t.Parallel()
	h := newHarness(t)
	h.edit = func(w *wiring.Parts) {
		w.Shows = func(p action.Payload) error {
			if strings.Contains(p.Text, "unshowable") {
				return errors.New("the review page cannot show the payload.Sticker this payload sets, so nobody is asked to approve it")
			}
			return nil
		}
	}
	h.open()
	ctx := context.Background()
	task, err := h.op.StartTask(ctx, journal.Task{Requester: operatorID, Chat: "1"})
	if err != nil {
		t.Fatal(err)
	}
	r, err := h.op.Call(ctx, task.ID, operator.Call{Tool: "commit_send_message", Args: sendArgs("222", "an unshowable payload")})
	if err != nil {
		t.Fatal(err)
	}
	if r.Status != action.StatusTerminal || r.SideEffect != action.SideEffectNone || !strings.Contains(r.Reason, "the review page cannot show the payload.Sticker") {
		t.Fatalf("Call = %+v, want stopped with the page's reason, nothing sent", r)
	}
	ts, err := h.j.Transitions(ctx, r.OperationID)
	if err != nil {
		t.Fatal(err)
	}
	var got []journal.State
	for _, tr := range ts {
		got = append(got, tr.To)
	}
	if want := []journal.State{journal.Prepared, journal.Failed}; !slices.Equal(got, want) {
		t.Errorf("path = %v, want %v: refused before any approval", got, want)
	}
	if _, err := h.op.PendingApproval(ctx, r.OperationID); !errors.Is(err, journal.ErrNotFound) {
		t.Errorf("an approval was asked: %v", err)
	}
	if _, opID := h.send("222", "a payload the page shows"); opID == "" {
		t.Error("a payload the page shows was not asked")
	}
	if n := len(h.sender.Sent()); n != 0 {
		t.Errorf("%d sends, want none", n)
	}
}
