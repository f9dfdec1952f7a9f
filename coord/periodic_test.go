package journal_test

import (
	"context"
	"sync"
	"testing"
	"time"

	"github.com/countersign/countersign/journal"
)

func TestATurnIsTakenOncePerInterval(t *testing.T) {
	t.Parallel()
	forEachBackend(t, testATurnIsTakenOncePerInterval)
}

func testATurnIsTakenOncePerInterval(t *testing.T, name string) {
	ctx := context.Background()
	j := open(t, name, nil)
	other := open(t, name, nil) // another process on the same journal
	const work, every = "reminders:telegram", 24 * time.Hour
	now := time.Date(2026, 12, 1, 9, 0, 0, 0, time.UTC)
	if at, err := j.LastDone(ctx, work); err != nil || !at.IsZero() {
		t.Fatalf("LastDone before any turn = %v, %v; want the zero time", at, err)
	}
	// Two processes ask for the same interval at once: one takes it.
	var wg sync.WaitGroup
	took := make([]bool, 2)
	for i, jj := range []*journal.Journal{j, other} {
		wg.Add(1)
		go func() {
			defer wg.Done()
			ok, err := jj.TakePeriodicTurn(ctx, work, now.Add(-every), now)
			if err != nil {
				t.Error(err)
			}
			took[i] = ok
		}()
	}
	wg.Wait()
	if took[0] == took[1] {
		t.Fatalf("turns taken = %v, want exactly one", took)
	}
	if at, err := other.LastDone(ctx, work); err != nil || !at.Equal(now) {
		t.Errorf("LastDone = %v, %v; want %v", at, err, now)
	}
	later := now.Add(every - time.Minute)
	if ok, err := other.TakePeriodicTurn(ctx, work, later.Add(-every), later); err != nil || ok {
		t.Errorf("TakeTurn within the interval = %v, %v; want false", ok, err)
	}
	if ok, err := j.TakePeriodicTurn(ctx, "another work", later.Add(-every), later); err != nil || !ok {
		t.Errorf("TakeTurn of other work = %v, %v; want true: each work has its own turn", ok, err)
	}
	next := now.Add(every + time.Second)
	if ok, err := other.TakePeriodicTurn(ctx, work, next.Add(-every), next); err != nil || !ok {
		t.Errorf("TakeTurn after the interval = %v, %v; want true", ok, err)
	}
	if at, err := j.LastDone(ctx, work); err != nil || !at.Equal(next) {
		t.Errorf("LastDone = %v, %v; want the turn just taken, %v", at, err, next)
	}
}

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
