package journal_test

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/countersign/countersign/action"
	"github.com/countersign/countersign/journal"
)

// askedFor moves a new operation to awaiting_approval with an approval that
// needs required approvers, and returns the operation and the approval.
func askedFor(t *testing.T, j *journal.Journal, required int) (journal.Operation, *journal.Approval) {
	t.Helper()
	_, op := newOp(t, j)
	a := j.NewApproval(op, 7, time.Hour)
	a.Required = required
	for _, m := range []journal.Move{{From: journal.Prepared, To: journal.Verified}, {From: journal.Verified, To: journal.AwaitingApproval, Approval: a}} {
		if err := j.Move(context.Background(), op.ID, m); err != nil {
			t.Fatal(err)
		}
	}
	return op, a
}

func stateOf(t *testing.T, j *journal.Journal, id string) journal.State {
	t.Helper()
	op, err := j.Operation(context.Background(), id)
	if err != nil {
		t.Fatal(err)
	}
	return op.State
}

// TestAQuorumNeedsThatManyDifferentApprovers: an approval that needs two
// stays waiting after the first, refuses the same approver twice, and is
// decided by the second, naming both; a rejection after one approval ends it.
func TestAQuorumNeedsThatManyDifferentApprovers(t *testing.T) {
	t.Parallel()
	forEachBackend(t, testAQuorumNeedsThatManyDifferentApprovers)
}

func testAQuorumNeedsThatManyDifferentApprovers(t *testing.T, name string) {
	ctx := context.Background()
	j := open(t, name, newClock().Now)
	op, a := askedFor(t, j, 2)
	got, err := j.Decide(ctx, a.ID, journal.DecideApprove, 42)
	if err != nil || got.Decision != journal.Pending || got.Missing() != 1 || len(got.Votes) != 1 {
		t.Fatalf("first approval = %+v, %v; want pending, one more missing", got, err)
	}
	if s := stateOf(t, j, op.ID); s != journal.AwaitingApproval {
		t.Fatalf("after one of two: %s, want awaiting_approval", s)
	}
	if _, err := j.Decide(ctx, a.ID, journal.DecideApprove, 42); !errors.Is(err, journal.ErrVoted) {
		t.Fatalf("the same approver again = %v, want ErrVoted", err)
	}
	got, err = j.Decide(ctx, a.ID, journal.DecideApprove, 44)
	if err != nil || got.Decision != journal.DecideApprove || got.Approvals() != 2 {
		t.Fatalf("second approval = %+v, %v; want approved by two", got, err)
	}
	if s := stateOf(t, j, op.ID); s != journal.Approved {
		t.Fatalf("after two of two: %s, want approved", s)
	}
	if ts, _ := j.Transitions(ctx, op.ID); ts[len(ts)-1].Reason != "approved by 42 and 44" {
		t.Errorf("the move says %q, want both approvers", ts[len(ts)-1].Reason)
	}
	read, err := j.Approval(ctx, a.ID)
	if err != nil || len(read.Votes) != 2 || read.Votes[0].By != 42 || read.Votes[1].By != 44 {
		t.Errorf("read back: %+v, %v; want the two votes in order", read, err)
	}

	op, a = askedFor(t, j, 2)
	if _, err := j.Decide(ctx, a.ID, journal.DecideApprove, 42); err != nil {
		t.Fatal(err)
	}
	if got, err := j.Decide(ctx, a.ID, journal.DecideReject, 44); err != nil || got.Decision != journal.DecideReject {
		t.Fatalf("a rejection after one approval = %+v, %v; want rejected", got, err)
	}
	if s := stateOf(t, j, op.ID); s != journal.Rejected {
		t.Errorf("rejected quorum: %s, want rejected", s)
	}
}

// TestAnEditKeepsBothPayloadsAndVoidsTheApproval: the edited payload is the
// operation's, the old one is kept with who edited, the old approval is closed
// as edited (a tap on it is refused) and the new one is bound to the new hash.
func TestAnEditKeepsBothPayloadsAndVoidsTheApproval(t *testing.T) {
	t.Parallel()
	forEachBackend(t, testAnEditKeepsBothPayloadsAndVoidsTheApproval)
}

func testAnEditKeepsBothPayloadsAndVoidsTheApproval(t *testing.T, name string) {
	ctx := context.Background()
	c := newClock()
	j := open(t, name, c.Now)
	op, a := askedFor(t, j, 1)
	p := action.Payload{Action: "send_message", Target: "222", Text: "hi, corrected"}
	next := j.NewApproval(op, 7, time.Hour)
	e, err := j.EditPayload(ctx, a.ID, p, 42, next)
	if err != nil {
		t.Fatal(err)
	}
	now, _ := j.Operation(ctx, op.ID)
	if now.Payload.Text != "hi, corrected" || now.PayloadSHA256 != p.SHA256() || now.State != journal.AwaitingApproval {
		t.Errorf("operation after the edit: %q %s %s", now.Payload.Text, now.PayloadSHA256[:12], now.State)
	}
	es, _ := j.Edits(ctx, op.ID)
	if len(es) != 1 || es[0].Old.Text != "hi" || es[0].By != 42 || es[0].OldSHA256 != op.PayloadSHA256 || es[0].Seq != e.Seq || e.Seq != 1 {
		t.Errorf("edits = %+v, want the old payload kept, by 42", es)
	}
	if old, _ := j.Approval(ctx, a.ID); old.Decision != journal.DecideEdit || old.DecidedBy != 42 {
		t.Errorf("old approval = %s by %d, want edited by 42", old.Decision, old.DecidedBy)
	}
	if _, err := j.Decide(ctx, a.ID, journal.DecideApprove, 44); !errors.Is(err, journal.ErrDecided) {
		t.Errorf("a tap on the voided card = %v, want ErrDecided", err)
	}
	if latest, _ := j.LatestApproval(ctx, op.ID); latest.ID != next.ID || latest.PayloadSHA256 != p.SHA256() {
		t.Errorf("latest approval = %s bound to %s, want %s bound to the new payload", latest.ID, latest.PayloadSHA256[:12], next.ID)
	}
	if _, err := j.EditPayload(ctx, a.ID, p, 42, j.NewApproval(op, 7, time.Hour)); !errors.Is(err, journal.ErrDecided) {
		t.Errorf("an edit through the voided approval = %v, want ErrDecided", err)
	}
	c.Add(2 * time.Hour)
	if _, err := j.EditPayload(ctx, next.ID, p, 42, j.NewApproval(op, 7, time.Hour)); !errors.Is(err, journal.ErrExpired) {
		t.Errorf("an edit after the expiry = %v, want ErrExpired", err)
	}
}

// TestGrantsApproveOnlyWhatTheyName: a card's grant approves the listed
// approvals at once, and none when one of them changed since the card; a
// window grant approves its tool to its target until revoked, nothing else.
func TestGrantsApproveOnlyWhatTheyName(t *testing.T) {
	t.Parallel()
	forEachBackend(t, testGrantsApproveOnlyWhatTheyName)
}

func testGrantsApproveOnlyWhatTheyName(t *testing.T, name string) {
	ctx := context.Background()
	c := newClock()
	j := open(t, name, c.Now)
	item := func(op journal.Operation, a *journal.Approval) journal.GrantItem {
		return journal.GrantItem{Approval: a.ID, Operation: op.ID, PayloadSHA256: a.PayloadSHA256}
	}
	op1, a1 := askedFor(t, j, 1)
	op2, a2 := askedFor(t, j, 1)
	stale := item(op2, a2)
	stale.PayloadSHA256 = action.Payload{Text: "what the card showed"}.SHA256()
	if _, _, err := j.GrantApprovals(ctx, 42, "t", []journal.GrantItem{item(op1, a1), stale}); !errors.Is(err, journal.ErrNotCovered) {
		t.Fatalf("a grant over a changed payload = %v, want ErrNotCovered", err)
	}
	if s := stateOf(t, j, op1.ID); s != journal.AwaitingApproval {
		t.Fatalf("after a refused grant, its first item is %s: want nothing approved", s)
	}
	g, got, err := j.GrantApprovals(ctx, 42, "t", []journal.GrantItem{item(op1, a1), item(op2, a2)})
	if err != nil || len(got) != 2 || got[0].Grant != g.ID || got[1].Decision != journal.DecideApprove {
		t.Fatalf("grant = %+v, %v", got, err)
	}

	w, err := j.GrantWindow(ctx, 42, "commit_send_message", "222", c.Now().Add(time.Hour))
	if err != nil {
		t.Fatal(err)
	}
	if found, ok, err := j.WindowGrantFor(ctx, "commit_send_message", "222", c.Now()); err != nil || !ok || found.ID != w.ID {
		t.Fatalf("WindowGrantFor = %v, %v, %v", found.ID, ok, err)
	}
	if _, ok, _ := j.WindowGrantFor(ctx, "commit_send_message", "333", c.Now()); ok {
		t.Error("a grant to 222 found for 333")
	}
	other, aOther := askedFor(t, j, 1)
	if err := j.Move(ctx, other.ID, journal.Move{From: journal.AwaitingApproval, To: journal.AwaitingApproval, Reason: "to 333",
		Payload: &action.Payload{Action: "send_message", Target: "333", Text: "hi"}}); err != nil {
		t.Fatal(err)
	}
	if _, err := j.DecideBallot(ctx, aOther.ID, journal.Ballot{Decision: journal.DecideApprove, By: 42, Grant: w.ID}); !errors.Is(err, journal.ErrNotCovered) {
		t.Errorf("a window grant to 222 deciding a send to 333 = %v, want ErrNotCovered", err)
	}
	_, a3 := askedFor(t, j, 1)
	if d, err := j.DecideBallot(ctx, a3.ID, journal.Ballot{Decision: journal.DecideApprove, By: 42, Grant: w.ID}); err != nil || d.Grant != w.ID {
		t.Fatalf("under the window grant = %+v, %v", d, err)
	}
	if _, err := j.RevokeGrant(ctx, w.ID, 44); err != nil {
		t.Fatal(err)
	}
	if _, err := j.RevokeGrant(ctx, w.ID, 44); !errors.Is(err, journal.ErrGrantEnded) {
		t.Errorf("revoked twice = %v, want ErrGrantEnded", err)
	}
	op4, a4 := askedFor(t, j, 1)
	if _, err := j.DecideBallot(ctx, a4.ID, journal.Ballot{Decision: journal.DecideApprove, By: 42, Grant: w.ID}); !errors.Is(err, journal.ErrGrantEnded) {
		t.Errorf("under a revoked grant = %v, want ErrGrantEnded", err)
	}
	if s := stateOf(t, j, op4.ID); s != journal.AwaitingApproval {
		t.Errorf("after a revoked grant's try: %s, want awaiting_approval", s)
	}
	if _, ok, _ := j.WindowGrantFor(ctx, "commit_send_message", "222", c.Now()); ok {
		t.Error("a revoked grant is still found")
	}
}

// TestAnApprovalIsDueForEscalationAtItsShareOnly: with a share of 0.5 of an
// hour's approval, none is due at its start or a second before half an hour,
// and it is at half an hour; on each backend (PostgreSQL once took the share
// for a whole number, 0, and made every approval due at once).
func TestAnApprovalIsDueForEscalationAtItsShareOnly(t *testing.T) {
	t.Parallel()
	forEachBackend(t, testAnApprovalIsDueForEscalationAtItsShareOnly)
}

func testAnApprovalIsDueForEscalationAtItsShareOnly(t *testing.T, name string) {
	ctx := context.Background()
	c := newClock()
	j := open(t, name, c.Now)
	_, a := askedFor(t, j, 1)
	for _, tt := range []struct {
		at   time.Duration
		want int
	}{{0, 0}, {30*time.Minute - time.Second, 0}, {30 * time.Minute, 1}, {40 * time.Minute, 1}} {
		due, err := j.Unescalated(ctx, "telegram", 0.5, a.Created.Add(tt.at))
		if err != nil || len(due) != tt.want {
			t.Errorf("due %s into the approval = %d, %v; want %d", tt.at, len(due), err, tt.want)
		}
	}
	if due, err := j.Unescalated(ctx, "telegram", 0.25, a.Created.Add(15*time.Minute)); err != nil || len(due) != 1 {
		t.Errorf("due at a quarter of it with a share of 0.25 = %d, %v; want 1", len(due), err)
	}
}
