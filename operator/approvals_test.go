package operator_test

import (
	"context"
	"encoding/json"
	"errors"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/countersign/countersign/action"
	"github.com/countersign/countersign/journal"
	"github.com/countersign/countersign/operator"
	"github.com/countersign/countersign/policy"
)

const thirdApprover = 4

// quorumOf asks n approvers for every commit_send_message, among three.
func quorumOf(h *harness, n int) {
	h.pol.Access.Approvers = []policy.UserID{operatorID, approverID, thirdApprover}
	tp := h.pol.Tools["commit_send_message"]
	tp.Approvals = n
	h.pol.Tools["commit_send_message"] = tp
	h.open()
}

func reasons(t *testing.T, h *harness, opID string) []string {
	t.Helper()
	ts, err := h.j.Transitions(context.Background(), opID)
	if err != nil {
		t.Fatal(err)
	}
	var rs []string
	for _, tr := range ts {
		rs = append(rs, tr.Reason)
	}
	return rs
}

// TestAQuorumCommitsOnTheLastApproverOnly: with approvals: 2, the first tap is
// counted and sends nothing, the same approver again is refused, and the second
// approver's tap commits once, the move naming both.
func TestAQuorumCommitsOnTheLastApproverOnly(t *testing.T) {
	t.Parallel()
	h := newHarness(t)
	quorumOf(h, 2)
	ctx := context.Background()
	_, opID := h.send("222", "hello")
	apID := h.approval(opID)
	r, err := h.op.Decide(ctx, apID, operatorID, true)
	if err != nil || r.Status != action.StatusPending || r.Cause != action.CauseQuorum || !strings.Contains(r.Reason, "(1 of 2)") {
		t.Fatalf("first approval = %+v, %v; want pending, 1 of 2", r, err)
	}
	if len(h.sender.Sent()) != 0 || h.state(opID) != journal.AwaitingApproval {
		t.Fatalf("after one of two: %d sent, %s", len(h.sender.Sent()), h.state(opID))
	}
	if _, err := h.op.Decide(ctx, apID, operatorID, true); !errors.Is(err, operator.ErrVoted) {
		t.Fatalf("the same approver twice = %v, want ErrVoted", err)
	}
	r, err = h.op.Decide(ctx, apID, approverID, true)
	if err != nil || r.Status != action.StatusSucceeded {
		t.Fatalf("second approval = %+v, %v; want sent", r, err)
	}
	if n := len(h.sender.Sent()); n != 1 {
		t.Errorf("sends = %d, want 1", n)
	}
	if rs := reasons(t, h, opID); !slices.Contains(rs, "approved by 1 and 2") {
		t.Errorf("reasons = %q, want the move to approved naming both approvers", rs)
	}
}

// TestAQuorumEndsAtTheFirstRejection and is never waived by auto_approve.
func TestAQuorumEndsAtTheFirstRejection(t *testing.T) {
	t.Parallel()
	h := newHarness(t)
	h.pol.AutoApprove = []policy.AutoApprove{policyRule("commit_send_message", "222")}
	quorumOf(h, 2)
	ctx := context.Background()
	_, opID := h.send("222", "hello") // pending despite the rule: fails inside send otherwise
	apID := h.approval(opID)
	if _, err := h.op.Decide(ctx, apID, operatorID, true); err != nil {
		t.Fatal(err)
	}
	r, err := h.op.Decide(ctx, apID, approverID, false)
	if err != nil || r.Cause != action.CauseRejected {
		t.Fatalf("rejection = %+v, %v", r, err)
	}
	if _, err := h.op.Decide(ctx, apID, thirdApprover, true); !errors.Is(err, operator.ErrDecided) {
		t.Errorf("an approval after the rejection = %v, want ErrDecided", err)
	}
	if len(h.sender.Sent()) != 0 || h.state(opID) != journal.Rejected {
		t.Errorf("after a rejection: %d sent, %s", len(h.sender.Sent()), h.state(opID))
	}
}

// TestTheSendersQuorumIsAskedForAgain: a task asked under one approver is
// approved by one, but the policy in force where it is sent asks two: it goes
// back to awaiting approval with an approval for two, and nothing is sent.
func TestTheSendersQuorumIsAskedForAgain(t *testing.T) {
	t.Parallel()
	h := newHarness(t)
	ctx := context.Background()
	_, opID := h.send("222", "hello")
	apID := h.approval(opID)
	quorumOf(h, 2)
	r, err := h.op.Decide(ctx, apID, approverID, true)
	if err != nil || r.Status != action.StatusPending {
		t.Fatalf("Decide = %+v, %v; want pending again", r, err)
	}
	if len(h.sender.Sent()) != 0 {
		t.Fatal("sent on one approval where the sender's policy asks two")
	}
	if rs := reasons(t, h, opID); rs[len(rs)-1] != operator.ReasonAskedAgain {
		t.Errorf("last reason = %q, want %q", rs[len(rs)-1], operator.ReasonAskedAgain)
	}
	a, err := h.j.LatestApproval(ctx, opID)
	if err != nil || a.Required != 2 || a.ID == apID {
		t.Errorf("new approval = %+v, %v; want a new one for two approvers", a, err)
	}
}

// TestAnEditBeforeApprovalSendsTheEditedTextOnly: an approver's edit voids the
// card, keeps the old payload, tells the surfaces, and the commit sends the new
// text; the old card's tap is refused; a stranger's edit changes nothing.
func TestAnEditBeforeApprovalSendsTheEditedTextOnly(t *testing.T) {
	t.Parallel()
	h := newHarness(t)
	rec := record(t, h.op, h.j)
	ctx := context.Background()
	_, opID := h.send("222", "helo wrld")
	apID := h.approval(opID)
	if _, err := h.op.Edit(ctx, apID, strangerID, "hacked"); !errors.Is(err, operator.ErrNotApprover) {
		t.Fatalf("a stranger's edit = %v, want ErrNotApprover", err)
	}
	if _, err := h.op.Edit(ctx, apID, approverID, "see https://example.com/TODO"); !errors.Is(err, operator.ErrEditRefused) {
		t.Fatalf("an edit the verifier refuses = %v, want ErrEditRefused", err)
	}
	if h.approval(opID) != apID {
		t.Fatal("a refused edit changed the approval")
	}
	ed, err := h.op.Edit(ctx, apID, approverID, "hello world")
	if err != nil {
		t.Fatal(err)
	}
	if ed.Operation.Payload.Text != "hello world" || ed.Edit.Old.Text != "helo wrld" || ed.Approval.PayloadSHA256 != ed.Operation.Payload.SHA256() {
		t.Errorf("edited = %+v", ed)
	}
	if _, err := h.op.Decide(ctx, apID, operatorID, true); !errors.Is(err, operator.ErrDecided) {
		t.Fatalf("the old card's tap = %v, want ErrDecided", err)
	}
	r, err := h.op.Decide(ctx, ed.Approval.ID, operatorID, true)
	if err != nil || r.Status != action.StatusSucceeded {
		t.Fatalf("Decide = %+v, %v", r, err)
	}
	if sent := h.sender.Sent(); len(sent) != 1 || sent[0].Text != "hello world" {
		t.Errorf("sent = %+v, want the edited text once", sent)
	}
	var kinds []operator.EventKind
	for _, e := range rec.events() {
		kinds = append(kinds, e.Kind)
	}
	want := []operator.EventKind{operator.ApprovalNeeded, operator.Decided, operator.PayloadEdited, operator.ApprovalNeeded, operator.Decided, operator.Outcome}
	if !slices.Equal(kinds, want) {
		t.Errorf("events = %v, want %v", kinds, want)
	}
	if got := h.states(opID); !slices.Equal(got[2:5], []journal.State{journal.AwaitingApproval, journal.AwaitingApproval, journal.Approved}) {
		t.Errorf("states = %v, want an edit's move between the two approvals", got)
	}
}

// TestAnApprovalNobodyDecidedIsEscalated: past escalate_after of its time, the
// sweep sends the approval to the escalation list once, and from then on its
// members may decide it; before that they may not.
func TestAnApprovalNobodyDecidedIsEscalated(t *testing.T) {
	t.Parallel()
	h := newHarness(t)
	h.pol.EscalateAfter, h.pol.Access.Escalation = 0.5, []policy.UserID{strangerID}
	h.edit = fastSweep
	h.open()
	rec := record(t, h.op, h.j)
	ctx := context.Background()
	_, opID := h.send("222", "hello")
	apID := h.approval(opID)
	if _, err := h.op.Decide(ctx, apID, strangerID, true); !errors.Is(err, operator.ErrNotApprover) {
		t.Fatalf("the escalation list before the escalation = %v, want ErrNotApprover", err)
	}
	h.clock.Advance(h.pol.ApprovalTTL/2 + time.Second)
	sweepUntil(t, h, rec, operator.ApprovalEscalated, 50*time.Millisecond) // five more sweeps: none escalates again
	var escalated int
	for _, e := range rec.events() {
		if e.Kind == operator.ApprovalEscalated {
			escalated++
		}
	}
	if escalated != 1 {
		t.Fatalf("escalations published = %d, want 1", escalated)
	}
	r, err := h.op.Decide(ctx, apID, strangerID, true)
	if err != nil || r.Status != action.StatusSucceeded {
		t.Fatalf("the escalation list after = %+v, %v; want sent", r, err)
	}
}

// TestGrants: a window grant approves its tool to its chat without a card,
// names itself in the move, is refused for a quorum and past grant_max, and
// ends when revoked; a task's card grant approves exactly the listed
// approvals, and none once the list changed.
func TestGrants(t *testing.T) {
	t.Parallel()
	h := newHarness(t)
	h.pol.GrantMax = time.Hour
	h.open()
	ctx := context.Background()
	if _, err := h.op.GrantWindow(ctx, approverID, "commit_send_message", "222", 2*time.Hour); !errors.Is(err, operator.ErrGrant) {
		t.Fatalf("a grant past grant_max = %v, want ErrGrant", err)
	}
	if _, err := h.op.GrantWindow(ctx, strangerID, "commit_send_message", "222", time.Hour); !errors.Is(err, operator.ErrNotApprover) {
		t.Fatalf("a stranger's grant = %v, want ErrNotApprover", err)
	}
	g, err := h.op.GrantWindow(ctx, approverID, "commit_send_message", "+222", time.Hour)
	if err != nil {
		t.Fatal(err)
	}
	task, err := h.op.StartTask(ctx, journal.Task{Requester: operatorID, Chat: "1"})
	if err != nil {
		t.Fatal(err)
	}
	r, err := h.op.Call(ctx, task.ID, callSend("222", "under the grant"))
	if err != nil || r.Status != action.StatusSucceeded || r.Reason != "approved under grant "+g.ID {
		t.Fatalf("a send under the grant = %+v, %v; want sent without a card, naming the grant", r, err)
	}
	if rs := reasons(t, h, r.OperationID); !slices.ContainsFunc(rs, func(s string) bool { return strings.Contains(s, "under grant "+g.ID) }) {
		t.Errorf("reasons = %q, want the grant named", rs)
	}
	if r, _ := h.op.Call(ctx, task.ID, callSend("333", "another chat")); r.Status != action.StatusPending {
		t.Errorf("a send to another chat = %+v, want a card", r)
	}
	if _, err := h.op.Revoke(ctx, operatorID, g.ID); err != nil {
		t.Fatal(err)
	}
	if r, _ := h.op.Call(ctx, task.ID, callSend("222", "after the revocation")); r.Status != action.StatusPending {
		t.Errorf("a send after the revocation = %+v, want a card", r)
	}

	other, err := h.op.StartTask(ctx, journal.Task{Requester: operatorID, Chat: "1"})
	if err != nil {
		t.Fatal(err)
	}
	for _, text := range []string{"one", "two"} {
		if r, _ := h.op.Call(ctx, other.ID, callSend("444", text)); r.Status != action.StatusPending {
			t.Fatalf("Call = %+v", r)
		}
	}
	offer, err := h.op.OfferTask(ctx, approverID, other.ID)
	if err != nil || len(offer.Items) != 2 {
		t.Fatalf("offer = %+v, %v; want two approvals", offer, err)
	}
	if _, _, err := h.op.GrantTask(ctx, approverID, other.ID, "0123456789abcdef"); !errors.Is(err, operator.ErrGrant) {
		t.Fatalf("a grant with a forged digest = %v, want ErrGrant", err)
	}
	sentBefore := len(h.sender.Sent())
	_, ds, err := h.op.GrantTask(ctx, approverID, other.ID, offer.Digest)
	if err != nil || len(ds) != 2 {
		t.Fatalf("GrantTask = %v, %v", ds, err)
	}
	for _, d := range ds {
		if r, err := h.op.Proceed(ctx, d); err != nil || r.Status != action.StatusSucceeded {
			t.Errorf("Proceed = %+v, %v", r, err)
		}
	}
	if n := len(h.sender.Sent()) - sentBefore; n != 2 {
		t.Errorf("sends under the card's grant = %d, want 2", n)
	}
	if _, _, err := h.op.GrantTask(ctx, approverID, other.ID, offer.Digest); !errors.Is(err, operator.ErrGrant) {
		t.Errorf("the same grant again = %v, want ErrGrant (nothing waits)", err)
	}

	quorumOf(h, 2)
	h.pol.GrantMax = time.Hour
	if _, err := h.op.GrantWindow(ctx, approverID, "commit_send_message", "222", time.Hour); !errors.Is(err, operator.ErrGrant) {
		t.Errorf("a grant where two approvers are asked = %v, want ErrGrant", err)
	}
}

// TestAGrantEndsWhenALoweredGrantMaxSays: a window grant given for 8h under
// grant_max 8h is cut to a grant_max lowered to 1h: within the hour it still
// approves, past it a card is asked and /grants no longer lists it; the
// journal keeps the time it was given for.
func TestAGrantEndsWhenALoweredGrantMaxSays(t *testing.T) {
	t.Parallel()
	h := newHarness(t)
	h.pol.GrantMax = 8 * time.Hour
	h.open()
	ctx := context.Background()
	g, err := h.op.GrantWindow(ctx, approverID, "commit_send_message", "222", 8*time.Hour)
	if err != nil {
		t.Fatal(err)
	}
	h.pol.GrantMax = time.Hour
	h.open()
	task, err := h.op.StartTask(ctx, journal.Task{Requester: operatorID, Chat: "1"})
	if err != nil {
		t.Fatal(err)
	}
	h.clock.Advance(50 * time.Minute)
	if r, err := h.op.Call(ctx, task.ID, callSend("222", "within the lowered maximum")); err != nil || r.Status != action.StatusSucceeded {
		t.Fatalf("a send 50 minutes into the grant = %+v, %v; want sent under it", r, err)
	}
	if gs, err := h.op.Grants(ctx); err != nil || len(gs) != 1 || !gs[0].Until.Equal(g.Created.Add(time.Hour)) {
		t.Fatalf("Grants = %+v, %v; want the grant ending an hour after it was made", gs, err)
	}
	h.clock.Advance(20 * time.Minute)
	if r, err := h.op.Call(ctx, task.ID, callSend("222", "past the lowered maximum")); err != nil || r.Status != action.StatusPending {
		t.Errorf("a send 70 minutes into the grant = %+v, %v; want a card: grant_max is now 1h", r, err)
	}
	if gs, err := h.op.Grants(ctx); err != nil || len(gs) != 0 {
		t.Errorf("Grants = %+v, %v; want none in force", gs, err)
	}
	if kept, err := h.j.Grant(ctx, g.ID); err != nil || !kept.Until.Equal(g.Until) {
		t.Errorf("journaled grant = %+v, %v; want it as it was given", kept, err)
	}
}

// TestForwardsAndCopiesAreNeverGranted: a copy or a forward puts a message of
// another chat into the grant's chat; no window grant is given for one, and a
// grant journaled for one (by an older version) approves nothing: each asks.
func TestForwardsAndCopiesAreNeverGranted(t *testing.T) {
	t.Parallel()
	h := newHarness(t)
	h.pol.GrantMax = time.Hour
	for _, name := range []string{"commit_copy_message", "commit_forward_message"} {
		h.pol.Tools[name] = policy.Tool{SideEffect: policy.SideEffectCommitted, Approval: policy.ApprovalRequired}
	}
	h.open()
	ctx := context.Background()
	for _, name := range []string{"commit_copy_message", "commit_forward_message"} {
		if _, err := h.op.GrantWindow(ctx, approverID, name, "222", time.Hour); !errors.Is(err, operator.ErrGrant) {
			t.Errorf("a grant of %s = %v, want ErrGrant", name, err)
		}
	}
	if _, err := h.j.GrantWindow(ctx, approverID, "commit_copy_message", "222", h.clock.Now().Add(time.Hour)); err != nil {
		t.Fatal(err)
	}
	task, err := h.op.StartTask(ctx, journal.Task{Requester: operatorID, Chat: "1"})
	if err != nil {
		t.Fatal(err)
	}
	args := json.RawMessage(`{"chat_id": "222", "from_chat_id": "-1009999", "message_id": 7}`)
	r, err := h.op.Call(ctx, task.ID, operator.Call{Tool: "commit_copy_message", Args: args})
	if err != nil || r.Status != action.StatusPending {
		t.Errorf("a copy under a journaled grant = %+v, %v; want a card", r, err)
	}
}

// TestNobodyApprovesTheirOwnRequestWhereSelfApprovalIsOff: under
// self_approval: false the person who asked may reject their request but not
// approve it, by a tap, a window grant of theirs or a grant of their task; the
// card goes to the other approvers, whose tap sends. The policy in force
// narrows a task started where it was allowed: the requester's approval given
// before the file changed is asked again, not sent.
func TestNobodyApprovesTheirOwnRequestWhereSelfApprovalIsOff(t *testing.T) {
	t.Parallel()
	off := false
	h := newHarness(t)
	h.pol.SelfApproval = &off
	h.open()
	ctx := context.Background()

	taskID, id := h.send("222", "mine to ask, not mine to approve")
	task, err := h.j.Task(ctx, taskID)
	if err != nil {
		t.Fatal(err)
	}
	if got := h.op.Approvers(task); len(got) != 1 || got[0] != approverID {
		t.Errorf("approvers shown the card = %v, want [%d]: not the requester", got, approverID)
	}
	if _, err := h.op.Decide(ctx, h.approval(id), operatorID, true); !errors.Is(err, operator.ErrSelfApproval) {
		t.Fatalf("the requester's approval = %v, want ErrSelfApproval", err)
	}
	if _, err := h.op.OfferTask(ctx, operatorID, taskID); !errors.Is(err, operator.ErrSelfApproval) {
		t.Errorf("the requester's grant of their task = %v, want ErrSelfApproval", err)
	}
	if st, n := h.state(id), len(h.sender.Sent()); st != journal.AwaitingApproval || n != 0 {
		t.Fatalf("after the requester's approval: %s, %d sends; want awaiting_approval and nothing sent", st, n)
	}
	if r, err := h.op.Decide(ctx, h.approval(id), approverID, true); err != nil || r.Status != action.StatusSucceeded {
		t.Fatalf("another approver's tap = %+v, %v; want it sent", r, err)
	}

	if _, err := h.op.GrantWindow(ctx, operatorID, "commit_send_message", "333", time.Hour); err != nil {
		t.Fatal(err)
	}
	_, granted := h.send("333", "a grant of mine does not approve my own request")
	_, rejected := h.send("444", "mine to reject")
	if r, err := h.op.Decide(ctx, h.approval(rejected), operatorID, false); err != nil || r.Cause != action.CauseRejected {
		t.Errorf("the requester's rejection = %+v, %v; want it rejected", r, err)
	}
	if st := h.state(granted); st != journal.AwaitingApproval {
		t.Errorf("a request under its requester's own grant is %s, want awaiting_approval", st)
	}

	// Allowed when the task started, forbidden where it is sent.
	h.pol.SelfApproval = nil
	h.open()
	_, before := h.send("555", "approved by its requester before the file changed")
	d, err := h.op.Record(ctx, h.approval(before), operatorID, true)
	if err != nil || !d.Approved() {
		t.Fatalf("the requester's approval while allowed = %+v, %v", d, err)
	}
	h.pol.SelfApproval = &off
	h.open() // the process stopped between the decision and the send
	sweep(t, h.op)
	waitUntil(t, "the approval asked again", func() bool { return h.state(before) == journal.AwaitingApproval })
	if n := len(h.sender.Sent()); n != 1 {
		t.Errorf("sends = %d, want only the one the other approver approved", n)
	}
	ts, _ := h.j.Transitions(ctx, before)
	if last := ts[len(ts)-1]; last.From != journal.Approved || last.Reason != operator.ReasonAskedAgain {
		t.Errorf("last transition %+v, want approved -> awaiting_approval (%s)", last, operator.ReasonAskedAgain)
	}
}
