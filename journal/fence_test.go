package journal_test

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/countersign/countersign/action"
	"github.com/countersign/countersign/internal/pgtest"
	"github.com/countersign/countersign/journal"
)

// A replica holds the commit it moved to committing only while it is that
// attempt, claimed by it, with lease to spare: ProveHolding, the sender's last check
// before the write, proves exactly that, and refuses with action.ErrFenced once
// another replica made the commit unknown after the lease, a person resolved
// it, and the retry was moved to committing again.
func TestHoldProvesTheAttemptAndTheClaim(t *testing.T) {
	t.Parallel()
	forEachBackend(t, testHoldProvesTheAttemptAndTheClaim)
}

func testHoldProvesTheAttemptAndTheClaim(t *testing.T, name string) {
	ctx := context.Background()
	c := newClock()
	r1, r2 := replica(t, name, "r1", c), replica(t, name, "r2", c)
	_, op := newOp(t, r1)
	committing(t, r1, op)
	first := journal.Fence{Operation: op.ID, Attempt: 1}
	if err := r1.ProveHolding(ctx, first); err != nil {
		t.Fatalf("r1 right after its move: ProveHolding = %v, want nil", err)
	}
	for _, tc := range []struct {
		what string
		j    *journal.Journal
		f    journal.Fence
	}{
		{"another replica", r2, first},
		{"another attempt", r1, journal.Fence{Operation: op.ID, Attempt: 2}},
	} {
		if err := tc.j.ProveHolding(ctx, tc.f); !errors.Is(err, action.ErrFenced) {
			t.Errorf("%s: ProveHolding = %v, want ErrFenced", tc.what, err)
		}
	}
	c.Add(9 * time.Second) // a second of a 10 s lease left: too little to write in
	if err := r1.ProveHolding(ctx, first); !errors.Is(err, action.ErrFenced) {
		t.Errorf("with 1 s of lease left: ProveHolding = %v, want ErrFenced", err)
	}
	if err := r1.RenewLeases(ctx); err != nil {
		t.Fatal(err)
	}
	if err := r1.ProveHolding(ctx, first); err != nil {
		t.Errorf("after a renewal: ProveHolding = %v, want nil", err)
	}
	// r1 stalls past its lease; r2 recovers, a person says it never arrived, the
	// retry is approved and r2 moves it to committing.
	c.Add(11 * time.Second)
	if moved, err := r2.RecoverExpired(ctx, "telegram"); err != nil || len(moved) != 1 {
		t.Fatalf("RecoverExpired = %v, %v", moved, err)
	}
	for _, m := range []journal.Move{
		{From: journal.Unknown, To: journal.NotDelivered},
		{From: journal.NotDelivered, To: journal.Approved},
		{From: journal.Approved, To: journal.Committing, StartAttempt: true},
	} {
		if err := r2.Move(ctx, op.ID, m); err != nil {
			t.Fatal(err)
		}
	}
	if err := r1.ProveHolding(ctx, first); !errors.Is(err, action.ErrFenced) {
		t.Errorf("r1 resuming after the retry was taken: ProveHolding = %v, want ErrFenced", err)
	}
	if err := r2.ProveHolding(ctx, journal.Fence{Operation: op.ID, Attempt: 2}); err != nil {
		t.Errorf("r2 on its retry: ProveHolding = %v, want nil", err)
	}
}

// The move to committing is a compare-and-set on the claim as well as the state:
// a replica cannot send what another live replica approved or scheduled, and can
// once that replica's lease is past.
func TestTheMoveToCommittingChecksTheClaim(t *testing.T) {
	t.Parallel()
	forEachBackend(t, testTheMoveToCommittingChecksTheClaim)
}

func testTheMoveToCommittingChecksTheClaim(t *testing.T, name string) {
	ctx := context.Background()
	c := newClock()
	r1, r2 := replica(t, name, "r1", c), replica(t, name, "r2", c)
	_, op := newOp(t, r1)
	approved(t, r1, op)
	send := journal.Move{From: journal.Approved, To: journal.Committing, StartAttempt: true}
	if err := r2.Move(ctx, op.ID, send); !errors.Is(err, journal.ErrHeld) {
		t.Fatalf("r2 within r1's lease: Move = %v, want ErrHeld", err)
	}
	if got, _ := r2.Operation(ctx, op.ID); got.State != journal.Approved || got.ClaimedBy != "r1" {
		t.Fatalf("after the refused move: %s claimed by %q, want approved, r1's", got.State, got.ClaimedBy)
	}
	c.Add(11 * time.Second)
	if err := r2.Move(ctx, op.ID, send); err != nil {
		t.Fatalf("r2 past r1's lease: Move = %v, want nil", err)
	}
}

// Leases on PostgreSQL are written and compared by the database's clock: a live
// replica whose own clock is 15 s behind keeps its commit, where by its own
// clock the lease it wrote would be past already for every other replica.
func TestLeasesFollowTheDatabasesClock(t *testing.T) {
	t.Parallel()
	name := pgtest.Fresh(t)
	ctx := context.Background()
	behind := func() time.Time { return time.Now().Add(-15 * time.Second) }
	r1 := openWith(t, name, journal.WithClock(behind))
	if err := r1.Join(ctx, "telegram", "r1", 10*time.Second); err != nil {
		t.Fatal(err)
	}
	r2 := openWith(t, name)
	if err := r2.Join(ctx, "telegram", "r2", 10*time.Second); err != nil {
		t.Fatal(err)
	}
	_, op := newOp(t, r1)
	committing(t, r1, op)
	if moved, err := r2.RecoverExpired(ctx, "telegram"); err != nil || len(moved) != 0 {
		t.Errorf("RecoverExpired of a live replica's commit = %v, %v; want nothing", moved, err)
	}
	if err := r1.ProveHolding(ctx, journal.Fence{Operation: op.ID, Attempt: 1}); err != nil {
		t.Errorf("the slow-clocked holder: ProveHolding = %v, want nil", err)
	}
	now, err := r2.LeaseNow(ctx)
	if err != nil || time.Since(now).Abs() > 5*time.Second {
		t.Errorf("LeaseNow = %v, %v; want the database's now", now, err)
	}
}

// A replica whose name lock went with its database session (a network cut, a
// server restart) may share its name with a process that joined since and
// recovered its commits: it notices at its next renewal, closes NameLost, and moves
// nothing more to committing; ProveHolding fails on the dead session at once.
func TestAReplicaThatLostItsNameStopsCommitting(t *testing.T) {
	t.Parallel()
	name := pgtest.Fresh(t)
	ctx := context.Background()
	c := newClock()
	r1 := replica(t, name, "r1", c)
	_, held := newOp(t, r1)
	committing(t, r1, held)
	_, next := newOp(t, r1)
	approved(t, r1, next)
	classid, objid := r1.NameLock("r1")
	endSession(t, name, classid, objid)
	if err := r1.ProveHolding(ctx, journal.Fence{Operation: held.ID, Attempt: 1}); !errors.Is(err, action.ErrFenced) {
		t.Errorf("ProveHolding on a dead name lock = %v, want ErrFenced", err)
	}
	deadline := time.Now().Add(10 * time.Second)
	for err := r1.RenewLeases(ctx); !errors.Is(err, journal.ErrReplicaLost); err = r1.RenewLeases(ctx) {
		if time.Now().After(deadline) {
			t.Fatalf("Renew 10 s after the session ended = %v, want ErrReplicaLost", err)
		}
		time.Sleep(50 * time.Millisecond)
	}
	select {
	case <-r1.NameLost():
	default:
		t.Error("Lost is not closed")
	}
	err := r1.Move(ctx, next.ID, journal.Move{From: journal.Approved, To: journal.Committing, StartAttempt: true})
	if !errors.Is(err, journal.ErrReplicaLost) {
		t.Errorf("a move to committing after the loss = %v, want ErrReplicaLost", err)
	}
	// The name is free: a new process joins under it and recovers the commit.
	again := replica(t, name, "r1", c)
	if got, _ := again.Operation(ctx, held.ID); got.State != journal.Unknown {
		t.Errorf("the commit after a new r1 joined: %s, want unknown", got.State)
	}
}
