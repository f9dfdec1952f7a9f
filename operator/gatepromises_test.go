package operator_test

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/countersign/countersign/action"
	"github.com/countersign/countersign/journal"
	"github.com/countersign/countersign/operator"
	"github.com/countersign/countersign/policy"
)

// TestAQuorumsFirstTapThatRejectsEndsIt: of a quorum of two, a rejection that
// comes first ends the request: no vote is left waiting for a second, a later
// approval is refused, and nothing is sent.
func TestAQuorumsFirstTapThatRejectsEndsIt(t *testing.T) {
	t.Parallel()
	h := newHarness(t)
	quorumOf(h, 2)
	ctx := context.Background()
	_, opID := h.send("222", "hello")
	apID := h.approval(opID)
	r, err := h.op.Decide(ctx, apID, operatorID, false)
	if err != nil || r.Cause != action.CauseRejected || h.state(opID) != journal.Rejected {
		t.Fatalf("a first tap that rejects = %+v, %v, state %s; want rejected", r, err, h.state(opID))
	}
	for _, by := range []int64{approverID, thirdApprover} {
		if _, err := h.op.Decide(ctx, apID, policy.UserID(by), true); !errors.Is(err, operator.ErrDecided) {
			t.Errorf("an approval by %d after the rejection = %v, want ErrDecided", by, err)
		}
	}
	if n := len(h.sender.Sent()); n != 0 || h.state(opID) != journal.Rejected {
		t.Errorf("after a first rejection: %d sent, %s; want none, rejected", n, h.state(opID))
	}
}

// TestAVoteOfAnApproverRemovedBeforeTheQuorumDoesNotCount: one approver of a
// quorum of two votes, is then removed from the approvers of the policy in
// force, and a second approver completes the count: the sender counts one vote
// that holds, asks again, and sends nothing.
func TestAVoteOfAnApproverRemovedBeforeTheQuorumDoesNotCount(t *testing.T) {
	t.Parallel()
	h := newHarness(t)
	quorumOf(h, 2)
	ctx := context.Background()
	_, opID := h.send("222", "hello")
	apID := h.approval(opID)
	if r, err := h.op.Decide(ctx, apID, operatorID, true); err != nil || r.Cause != action.CauseQuorum {
		t.Fatalf("first vote = %+v, %v", r, err)
	}
	h.pol.Access.Approvers = []policy.UserID{approverID, thirdApprover} // operatorID removed
	h.open()
	r, err := h.op.Decide(ctx, apID, approverID, true)
	if err != nil || r.Status != action.StatusPending {
		t.Fatalf("the vote that completes the count = %+v, %v; want pending again", r, err)
	}
	if n := len(h.sender.Sent()); n != 0 {
		t.Fatalf("sent %d with one vote that holds of two", n)
	}
	if rs := reasons(t, h, opID); rs[len(rs)-1] != operator.ReasonAskedAgain {
		t.Errorf("last reason = %q, want %q", rs[len(rs)-1], operator.ReasonAskedAgain)
	}
	a, err := h.j.LatestApproval(ctx, opID)
	if err != nil || a.ID == apID || a.Decision != journal.Pending || a.Required != 2 || len(a.Votes) != 0 {
		t.Errorf("approval = %+v, %v; want a new one, for two, with no vote", a, err)
	}
}

// TestATaskGrantRefusesTheOldCodeWhenAnyItemChanged: after the offer of three
// approvals, deciding the second or the last, editing the last, or adding a
// fourth refuses the code the card carried, and nothing is approved.
func TestATaskGrantRefusesTheOldCodeWhenAnyItemChanged(t *testing.T) {
	t.Parallel()
	for _, tt := range []struct {
		name   string
		change func(t *testing.T, h *harness, task string, items []journal.GrantItem)
	}{
		{"the second decided", func(t *testing.T, h *harness, _ string, items []journal.GrantItem) {
			if _, err := h.op.Decide(context.Background(), items[1].Approval, operatorID, false); err != nil {
				t.Fatal(err)
			}
		}},
		{"the last decided", func(t *testing.T, h *harness, _ string, items []journal.GrantItem) {
			if _, err := h.op.Decide(context.Background(), items[2].Approval, operatorID, false); err != nil {
				t.Fatal(err)
			}
		}},
		{"the last edited", func(t *testing.T, h *harness, _ string, items []journal.GrantItem) {
			if _, err := h.op.Edit(context.Background(), items[2].Approval, operatorID, "edited since the card"); err != nil {
				t.Fatal(err)
			}
		}},
		{"a fourth added", func(t *testing.T, h *harness, task string, _ []journal.GrantItem) {
			if r, err := h.op.Call(context.Background(), task, callSend("444", "four")); err != nil || r.Status != action.StatusPending {
				t.Fatalf("Call = %+v, %v", r, err)
			}
		}},
	} {
		t.Run(tt.name, func(t *testing.T) {
			h := newHarness(t)
			ctx := context.Background()
			task, err := h.op.StartTask(ctx, journal.Task{Requester: operatorID, Chat: "1"})
			if err != nil {
				t.Fatal(err)
			}
			for _, text := range []string{"one", "two", "three"} {
				if r, err := h.op.Call(ctx, task.ID, callSend("444", text)); err != nil || r.Status != action.StatusPending {
					t.Fatalf("Call = %+v, %v", r, err)
				}
			}
			offer, err := h.op.OfferTask(ctx, approverID, task.ID)
			if err != nil || len(offer.Items) != 3 {
				t.Fatalf("offer = %+v, %v; want three", offer, err)
			}
			tt.change(t, h, task.ID, offer.Items)
			if _, ds, err := h.op.GrantTask(ctx, approverID, task.ID, offer.Digest); !errors.Is(err, operator.ErrGrant) {
				t.Fatalf("the old code = %v, %v; want ErrGrant", ds, err)
			}
			if n := len(h.sender.Sent()); n != 0 {
				t.Errorf("sent %d under a refused grant", n)
			}
			now, err := h.op.OfferTask(ctx, approverID, task.ID)
			if err != nil {
				t.Fatal(err)
			}
			for _, it := range now.Items {
				if a, err := h.j.LatestApproval(ctx, it.Operation); err != nil || a.Decision != journal.Pending {
					t.Errorf("%s after a refused grant = %+v, %v; want still pending", it.Operation, a, err)
				}
			}
		})
	}
}

// TestEscalationWaitsForEscalateAfter: sweeps before escalate_after of an
// approval's time, the first one included, escalate nothing, and the
// escalation list may not decide it; the first sweep past it escalates once,
// and a later sweep not again.
func TestEscalationWaitsForEscalateAfter(t *testing.T) {
	t.Parallel()
	h := newHarness(t)
	h.pol.EscalateAfter, h.pol.Access.Escalation = 0.5, []policy.UserID{strangerID}
	h.open()
	rec := record(t, h.op, h.j)
	ctx := context.Background()
	_, opID := h.send("222", "hello")
	apID := h.approval(opID)
	escalated := func() int {
		n := 0
		for _, e := range rec.events() {
			if e.Kind == operator.ApprovalEscalated {
				n++
			}
		}
		return n
	}
	half := h.pol.ApprovalTTL / 2
	start := h.clock.Now()
	for _, at := range []time.Duration{0, time.Second, half - time.Second} {
		h.clock.Advance(start.Add(at).Sub(h.clock.Now()))
		h.op.SweepOnce(ctx)
		if n := escalated(); n != 0 {
			t.Fatalf("a sweep %s after the approval escalated it (%d); escalate_after is %s of it", at, n, half)
		}
	}
	if _, err := h.op.Decide(ctx, apID, strangerID, true); !errors.Is(err, operator.ErrNotApprover) {
		t.Fatalf("the escalation list before escalate_after = %v, want ErrNotApprover", err)
	}
	if a, err := h.j.LatestApproval(ctx, opID); err != nil || !a.Escalated.IsZero() {
		t.Fatalf("approval = %+v, %v; want not escalated", a, err)
	}
	h.clock.Advance(2 * time.Second)
	h.op.SweepOnce(ctx)
	h.op.SweepOnce(ctx)
	if n := escalated(); n != 1 {
		t.Fatalf("escalations past escalate_after = %d, want 1", n)
	}
	if r, err := h.op.Decide(ctx, apID, strangerID, true); err != nil || r.Status != action.StatusSucceeded {
		t.Errorf("the escalation list after the escalation = %+v, %v; want sent", r, err)
	}
}
