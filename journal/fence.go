package journal

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/countersign/countersign/action"
	"github.com/countersign/countersign/internal/sqlstore"
)

// A replica holds an operation it moved to committing for as long as its lease
// (by the lease clock: the database's on PostgreSQL) and its name lock last.
// Past either, another replica may make the commit unknown, a person may
// resolve it and approve a retry, and that retry may be sent: the first
// replica, resuming late (a stalled process, a lost database), must then not
// write its request. ProveHolding is the proof it asks for right before the write
// (action.Fence); Lost tells a replica whose name lock went with its database
// session, which stops committing at once.

// ErrReplicaLost means this replica's name lock is gone (its database session
// ended): another process may have joined under the same name and recovered
// its commits. It commits nothing more; the process should stop, and a new one
// join.
var ErrReplicaLost = errors.New("this replica lost its name lock (its database session ended)")

// ErrHeld means another live replica holds the operation: it was approved or
// scheduled there, and that replica runs it.
var ErrHeld = errors.New("held by another replica")

// databaseClock reports whether leases are written and compared by the
// database's clock, which every replica shares whatever its own host's clock
// says: on PostgreSQL, unless a test set a lease clock (WithLeaseClock).
func (j *Journal) databaseClock() bool { return j.d.HasClock() && j.leaseNow == nil }

// LeaseClock is the lease clock's now in whole milliseconds, as SQL with its
// arguments: the database's clock, rounded as round says, where leases go by
// it (databaseClock); otherwise the journal's lease clock, rounded down, or
// up for sqlstore.Up. What replicas share beside the journal (package coord)
// reckons its leases by it too.
func (j *Journal) LeaseClock(round sqlstore.Round) (string, []any) {
	if j.databaseClock() {
		return j.d.Now(round), nil
	}
	t := j.leaseTime()
	now := t.UnixMilli()
	if round == sqlstore.Up && t.After(time.UnixMilli(now)) {
		now++
	}
	return "CAST(? AS BIGINT)", []any{now}
}

// leaseTime is the lease clock's now where it is not the database's.
func (j *Journal) leaseTime() time.Time {
	if j.leaseNow != nil {
		return j.leaseNow()
	}
	return j.now()
}

// LeaseUntil is the lease_until a claim made now records, as SQL with its
// arguments: the lease clock's now plus the lease, or 0 for a journal that is
// no replica.
func (j *Journal) LeaseUntil() (string, []any) {
	if j.rep == nil {
		return "CAST(? AS BIGINT)", []any{0}
	}
	now, args := j.LeaseClock(sqlstore.Nearest)
	return "(" + now + " + CAST(? AS BIGINT))", append(args, j.rep.lease.Milliseconds())
}

// RunsHere reports whether op, approved or waiting for a retry, is this process's to
// run, by the claim it carries and now, the lease clock's time (LeaseNow): a
// journal that is no replica runs all of them; a replica, those nobody holds, its
// own (an earlier life of its name left them), and those whose holder's lease is
// past. It is the rule the move to committing checks again in its
// compare-and-set (heldElsewhereSQL), read before trying.
func (j *Journal) RunsHere(op Operation, now time.Time) bool {
	if j.rep == nil {
		return true
	}
	return op.ClaimedBy == "" || op.ClaimedBy == j.rep.name || !now.Before(op.LeaseUntil)
}

// LeaseNow is the lease clock's time: what a claim's LeaseUntil compares with.
// On PostgreSQL it asks the database (databaseClock).
func (j *Journal) LeaseNow(ctx context.Context) (time.Time, error) {
	if !j.databaseClock() {
		return j.leaseTime(), nil
	}
	var now int64
	if err := j.db.QueryRowContext(ctx, "SELECT "+j.d.Now(sqlstore.Nearest)).Scan(&now); err != nil {
		return time.Time{}, fmt.Errorf("journal: the database's clock: %w", err)
	}
	return fromMS(now), nil
}

// NameLost returns a channel closed when this replica finds its name lock lost
// (see ErrReplicaLost); nil for a journal that is no replica.
func (j *Journal) NameLost() <-chan struct{} {
	if j.rep == nil {
		return nil
	}
	return j.rep.lost
}

func (j *Journal) lost() bool {
	if j.rep == nil {
		return false
	}
	select {
	case <-j.rep.lost:
		return true
	default:
		return false
	}
}

// checkName asks the session that holds the name lock whether it lives, and
// marks the lock lost when it does not. On SQLite the lock is a file lock that
// only the process's end releases.
func (j *Journal) checkName(ctx context.Context) error {
	if j.rep == nil || j.rep.conn == nil {
		return nil
	}
	if j.lost() {
		return ErrReplicaLost
	}
	r := j.rep
	r.connMu.Lock()
	defer r.connMu.Unlock()
	// Only this bound may cut the ping: a query cut short closes its session,
	// and with it the lock.
	ctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 5*time.Second)
	defer cancel()
	return j.lostWith(r.conn.Ping(ctx))
}

// keepName asks the name lock's session whether it lives every interval, from
// Join until the journal leaves or finds the lock lost: the server ends a
// session that says nothing for a lease (tryAdvisory), and a replica that is
// slow to start its renewals must not lose its name for that; it also finds a
// loss when nothing else asks.
func (j *Journal) keepName(interval time.Duration) {
	t := time.NewTicker(interval)
	defer t.Stop()
	for {
		select {
		case <-j.rep.stop:
			return
		case <-j.rep.lost:
			return
		case <-t.C:
			j.checkName(context.Background())
		}
	}
}

// lostWith marks the name lock lost when err left its session closed: the
// server released the lock with it.
func (j *Journal) lostWith(err error) error {
	if err == nil || !j.rep.conn.IsClosed() {
		return err
	}
	j.loseName()
	return fmt.Errorf("%w: %v", ErrReplicaLost, err)
}

func (j *Journal) loseName() {
	j.rep.lostOnce.Do(func() { close(j.rep.lost) })
}

// Fence names one commit attempt: the operation, and the number of the attempt
// that its move to committing (or a later part's StartAttempt) opened.
type Fence struct {
	Operation string
	Attempt   int
}

// holdMargin is the part of the lease that must be left for a request to be
// written: the time between the check and the write, with room to spare.
func (r *rep) holdMargin() time.Duration { return r.lease / 5 }

// HoldMargin is the part of its lease a replica's claim must have left for
// the work it guards to go on (holdMargin): a commit's write, or an agent
// CLI's run in its chat's turn (package coord). 0 for a journal that is no
// replica.
func (j *Journal) HoldMargin() time.Duration {
	if j.rep == nil {
		return 0
	}
	return j.rep.holdMargin()
}

// ProveHolding proves, right before a commit's request is written, that this process
// still holds attempt f: the operation is committing at that attempt and, for a
// replica, claimed by it with more than a fifth of its lease left by the lease
// clock, and (on PostgreSQL) read on the session that holds its name lock, so
// that the lock is proven alive too. Otherwise it returns an error wrapping
// action.ErrFenced: the request must not be written, and the operation is not
// this process's to record anything about.
func (j *Journal) ProveHolding(ctx context.Context, f Fence) error {
	var (
		state      State
		attempts   int
		by         string
		until, now int64
	)
	if j.lost() {
		return fmt.Errorf("journal: hold %s: %w: %w", f.Operation, action.ErrFenced, ErrReplicaLost)
	}
	var err error
	if j.rep != nil && j.rep.conn != nil {
		err = j.holdOnLock(ctx, f.Operation, &state, &attempts, &by, &until, &now)
	} else {
		now = ms(j.leaseTime())
		err = j.db.QueryRowContext(ctx, "SELECT state, attempts, claimed_by, lease_until FROM operations WHERE id = ?", f.Operation).
			Scan(&state, &attempts, &by, &until)
	}
	if err != nil {
		return fmt.Errorf("journal: hold %s: %w: %w", f.Operation, action.ErrFenced, err)
	}
	why := ""
	switch {
	case state != Committing:
		why = "it is " + string(state)
	case attempts != f.Attempt:
		why = fmt.Sprintf("it is at attempt %d, not %d", attempts, f.Attempt)
	case j.rep == nil:
	case by != j.rep.name:
		why = "replica " + orNobodyName(by) + " holds it"
	case until-now < j.rep.holdMargin().Milliseconds():
		why = fmt.Sprintf("the lease has %d ms left", max(0, until-now))
	}
	if why != "" {
		return fmt.Errorf("journal: hold %s: %w: %s", f.Operation, action.ErrFenced, why)
	}
	return nil
}

// holdOnLock reads what ProveHolding checks on the name lock's session, with the
// database's clock (or the test's lease clock).
func (j *Journal) holdOnLock(ctx context.Context, id string, state *State, attempts *int, by *string, until, now *int64) error {
	r := j.rep
	r.connMu.Lock()
	defer r.connMu.Unlock()
	ctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 5*time.Second)
	defer cancel()
	clock, args := j.d.Now(sqlstore.Nearest), []any{id}
	if j.leaseNow != nil {
		clock, args = "CAST($2 AS BIGINT)", append(args, ms(j.leaseNow()))
	}
	table := pgx.Identifier{j.pg.schema, "operations"}.Sanitize()
	var s string
	err := r.conn.QueryRow(ctx, "SELECT state, attempts, claimed_by, lease_until, "+clock+" FROM "+table+" WHERE id = $1", args...).
		Scan(&s, attempts, by, until, now)
	*state = State(s)
	return j.lostWith(err)
}
