package operator_test

import (
	"context"
	"errors"
	"fmt"
	"testing"
	"time"

	"github.com/countersign/countersign/action"
	"github.com/countersign/countersign/internal/rigtest"
	"github.com/countersign/countersign/internal/wiring"
	"github.com/countersign/countersign/journal"
	"github.com/countersign/countersign/operator"
	"github.com/countersign/countersign/policy"
	"github.com/countersign/countersign/tools"
)

// A caller's policy never widens the sender's. A process beside the bot (a `bot
// mcp` given a -policies of its own) whose policy auto-approves chat 222 records
// a commit approved by that rule; the bot, whose policy has no such rule, asks
// its approvers for a tap instead of sending, and sends once one of them taps.
func TestACallersPolicyNeverWidensTheSenders(t *testing.T) {
	t.Parallel()
	h := newHarness(t)
	h.edit = func(w *wiring.Parts) { w.WatchEvery = 5 * time.Millisecond }
	h.open()
	ctx := context.Background()
	wide := testPolicy(t)
	wide.AutoApprove = append(wide.AutoApprove, policyRule("commit_send_message", "222"))
	wide.Access.Approvers = append(wide.Access.Approvers, strangerID)
	beside := h.beside(rigtest.Policy(wide), rigtest.Clock(h.clock), rigtest.JournalOptions(journal.WithClock(h.clock.Now)), rigtest.Parts(func(w *wiring.Parts) { w.Remote = true })).Operator
	task, err := beside.StartTask(ctx, journal.Task{Requester: operatorID, Surface: "mcp"})
	if err != nil {
		t.Fatal(err)
	}
	r, err := beside.Call(ctx, task.ID, callSend("222", "no tap was given for this"))
	if err != nil {
		t.Fatal(err)
	}
	id := r.OperationID
	sweep(t, h.op)
	waitUntil(t, "the bot asked for a tap", func() bool { return h.state(id) == journal.AwaitingApproval })
	if sent := h.sender.Sent(); len(sent) != 0 {
		t.Fatalf("sent %d messages on another process's auto-approval", len(sent))
	}
	ts, _ := h.j.Transitions(ctx, id)
	if last := ts[len(ts)-1]; last.From != journal.Approved || last.Reason != operator.ReasonAskedAgain {
		t.Errorf("last transition %+v, want approved -> awaiting_approval (%s)", last, operator.ReasonAskedAgain)
	}
	a, err := h.op.PendingApproval(ctx, id)
	if err != nil {
		t.Fatal(err)
	}
	// An approver only of the caller's policy may not decide here.
	if _, err := h.op.Decide(ctx, a.ID, strangerID, true); !errors.Is(err, operator.ErrNotApprover) {
		t.Errorf("an approver of the caller's policy only: Decide = %v, want ErrNotApprover", err)
	}
	if r, err := h.op.Decide(ctx, a.ID, approverID, true); err != nil || r.Status != action.StatusSucceeded {
		t.Fatalf("the bot's approver taps: %+v, %v; want succeeded", r, err)
	}
	if n := len(h.sender.Sent()); n != 1 {
		t.Errorf("sends = %d, want 1", n)
	}
}

// A retry is a new decision, judged by the policy in force as well as the task's
// snapshot. A commit auto-approved under a rule, whose outcome became unknown
// and was resolved not delivered after the rule was removed (and an approver
// with it), needs a tap on its retry, and the removed approver's tap is refused.
func TestARetryIsJudgedByThePolicyInForce(t *testing.T) {
	t.Parallel()
	h := newHarness(t, fmt.Errorf("timeout after the request was written: %w", tools.ErrOutcomeUnknown), nil)
	h.pol.AutoApprove = append(h.pol.AutoApprove, policyRule("commit_send_message", "555"))
	h.open()
	ctx := context.Background()
	task, err := h.op.StartTask(ctx, journal.Task{Requester: operatorID, Chat: "1", Summary: "auto"})
	if err != nil {
		t.Fatal(err)
	}
	r, err := h.op.Call(ctx, task.ID, callSend("555", "digest"))
	if err != nil || r.SideEffect != action.SideEffectUnknown {
		t.Fatalf("first attempt = %+v, %v; want unknown", r, err)
	}
	id := r.OperationID
	// The rule and approver 2 are removed, and the bot restarted.
	h.pol = testPolicy(t)
	h.pol.Access.Approvers = []policy.UserID{operatorID}
	h.open()
	if _, err := h.op.Resolve(ctx, id, false, "operator"); err != nil {
		t.Fatal(err)
	}
	r, err = h.op.Retry(ctx, id)
	if err != nil || r.Status != action.StatusPending {
		t.Fatalf("Retry = %+v, %v; want pending: the rule that skipped the tap is gone", r, err)
	}
	if n := len(h.sender.Sent()); n != 1 {
		t.Fatalf("sends = %d, want only the first attempt", n)
	}
	a, err := h.op.PendingApproval(ctx, id)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := h.op.Decide(ctx, a.ID, approverID, true); !errors.Is(err, operator.ErrNotApprover) {
		t.Errorf("an approver removed since: Decide = %v, want ErrNotApprover", err)
	}
	if r, err := h.op.Decide(ctx, a.ID, operatorID, true); err != nil || r.Status != action.StatusSucceeded {
		t.Errorf("an approver of both: Decide = %+v, %v; want succeeded", r, err)
	}
}
