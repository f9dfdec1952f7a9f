package operator_test

import (
	"context"
	"strings"
	"testing"

	"github.com/countersign/countersign/action"
	"github.com/countersign/countersign/internal/rigtest"
	"github.com/countersign/countersign/journal"
	"github.com/countersign/countersign/policy"
)

// verifying is a harness: it runs the real verifier, as every harness does.
func verifying(t *testing.T) *harness { return newHarness(t) }

func TestVerifierStopsADuplicateBeforeAnyCard(t *testing.T) {
	t.Parallel()
	h := verifying(t)
	ctx := context.Background()
	_, first := h.send("222", "Weekly digest is out")
	task, _ := h.op.StartTask(ctx, journal.Task{Requester: operatorID, Chat: "1", Summary: "again"})
	r, err := h.op.Call(ctx, task.ID, callSend("222", "weekly  digest is out "))
	if err != nil {
		t.Fatal(err)
	}
	if r.NextAction != action.NextStop || !strings.Contains(r.Reason, first) {
		t.Errorf("duplicate = %+v, want a stop naming %s", r, first)
	}
	if _, err := h.op.PendingApproval(ctx, r.OperationID); err == nil {
		t.Error("the duplicate got an approval card")
	}
	if p := h.states(r.OperationID); fmtStates(p) != fmtStates([]journal.State{P, F}) {
		t.Errorf("path = %v, want [prepared failed]", p)
	}
}

// A duplicate of an operation whose seen key the journal does not know
// (journaled before it kept keys, or by a process that keeps none) is stopped
// too: the check reads such operations whole.
func TestVerifierStopsADuplicateOfAnOperationWithoutItsKey(t *testing.T) {
	t.Parallel()
	h := verifying(t)
	ctx := context.Background()
	unkeyed, err := journal.Open(ctx, h.file)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { unkeyed.Close() })
	before := h.beside(rigtest.Over(unkeyed))
	task, _ := before.Operator.StartTask(ctx, journal.Task{Requester: operatorID, Chat: "1", Summary: "before keys"})
	first, err := before.Operator.Call(ctx, task.ID, callSend("222", "Weekly digest is out"))
	if err != nil || first.Status != action.StatusPending {
		t.Fatalf("first = %+v, %v; want pending", first, err)
	}
	again, _ := h.op.StartTask(ctx, journal.Task{Requester: operatorID, Chat: "1", Summary: "again"})
	r, err := h.op.Call(ctx, again.ID, callSend("222", "weekly  digest is out "))
	if err != nil {
		t.Fatal(err)
	}
	if r.NextAction != action.NextStop || !strings.Contains(r.Reason, first.OperationID) {
		t.Errorf("duplicate = %+v, want a stop naming %s", r, first.OperationID)
	}
}

func TestVerifierRepairThenSecondRepairStops(t *testing.T) {
	t.Parallel()
	h := verifying(t)
	ctx := context.Background()
	task, _ := h.op.StartTask(ctx, journal.Task{Requester: operatorID, Chat: "1", Summary: "links"})
	r, _ := h.op.Call(ctx, task.ID, callSend("222", "Read more at https://example.com/post"))
	if r.Status != action.StatusRepairable || !strings.Contains(r.Reason, "placeholder host example.com") {
		t.Fatalf("placeholder link = %+v, want repairable naming the host", r)
	}
	r, _ = h.op.Call(ctx, task.ID, callSend("222", "Read more at https://example.org/post TODO"))
	if r.NextAction != action.NextStop || !strings.Contains(r.Reason, "repair budget spent") {
		t.Errorf("second repair = %+v, want a stop", r)
	}
	if len(h.sender.Sent()) != 0 {
		t.Error("something was sent")
	}
}

func TestVerifiedPayloadCarriesItsVerdict(t *testing.T) {
	t.Parallel()
	h := verifying(t)
	_, opID := h.send("222", "All clear at https://countersign.dev/status")
	ts, _ := h.j.Transitions(context.Background(), opID)
	if ts[1].To != V || !strings.HasPrefix(ts[1].Reason, "verifier: pass (") {
		t.Errorf("verify transition = %+v, want the verdict with its checks", ts[1])
	}
}

func TestVerifierKeepsTheRulesTheTaskStartedWith(t *testing.T) {
	t.Parallel()
	h := newHarness(t)
	free, err := policy.ParsePattern("free")
	if err != nil {
		t.Fatal(err)
	}
	h.pol.Verify.Rules = []policy.Rule{{Forbid: []policy.Pattern{free}, Reason: "no giveaways"}}
	h.open()
	ctx := context.Background()
	old, _ := h.op.StartTask(ctx, journal.Task{Requester: operatorID, Chat: "1", Summary: "before the edit"})

	// The rule is dropped from the policy and the bot restarted.
	h.pol.Verify.Rules = nil
	h.open()
	r, _ := h.op.Call(ctx, old.ID, callSend("222", "Free coffee today"))
	if r.Status != action.StatusRepairable || !strings.Contains(r.Reason, "no giveaways") {
		t.Errorf("call in the task started under the rule = %+v, want a repair naming it", r)
	}
	fresh, _ := h.op.StartTask(ctx, journal.Task{Requester: operatorID, Chat: "1", Summary: "after the edit"})
	if r, _ := h.op.Call(ctx, fresh.ID, callSend("222", "Free coffee today")); r.Status != action.StatusPending {
		t.Errorf("call in a task started after the edit = %+v, want pending approval", r)
	}
}
