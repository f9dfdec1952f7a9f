package journal_test

import (
	"context"
	"testing"
	"time"

	"github.com/countersign/countersign/journal"
)

func TestExpiringListsTheApprovalsNearTheirExpiry(t *testing.T) {
	t.Parallel()
	forEachBackend(t, testExpiringListsTheApprovalsNearTheirExpiry)
}

func testExpiringListsTheApprovalsNearTheirExpiry(t *testing.T, name string) {
	now := time.Date(2026, 12, 1, 9, 0, 0, 0, time.UTC)
	j := open(t, name, func() time.Time { return now })
	ctx := context.Background()
	pending := func(ttl time.Duration) *journal.Approval {
		_, op := newOp(t, j)
		if err := j.Move(ctx, op.ID, journal.Move{From: journal.Prepared, To: journal.Verified}); err != nil {
			t.Fatal(err)
		}
		a := j.NewApproval(op, 7, ttl)
		if err := j.Move(ctx, op.ID, journal.Move{From: journal.Verified, To: journal.AwaitingApproval, Approval: a}); err != nil {
			t.Fatal(err)
		}
		return a
	}
	soon, later, decided := pending(30*time.Minute), pending(3*time.Hour), pending(20*time.Minute)
	if _, err := j.Decide(ctx, decided.ID, journal.DecideReject, 9); err != nil {
		t.Fatal(err)
	}
	got, err := j.Expiring(ctx, "telegram", now.Add(time.Hour))
	if err != nil || len(got) != 1 || got[0].ID != soon.ID {
		t.Fatalf("Expiring within the hour = %+v, %v; want only %s (not %s, later, nor %s, decided)", got, err, soon.ID, later.ID, decided.ID)
	}
	now = now.Add(time.Hour) // soon has expired: nothing a reminder could save
	if got, err := j.Expiring(ctx, "telegram", now.Add(time.Hour)); err != nil || len(got) != 0 {
		t.Errorf("Expiring after the expiry = %+v, %v; want none", got, err)
	}
}
