package journal_test

import (
	"context"
	"database/sql"
	"fmt"
	"slices"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/countersign/countersign/action"
	"github.com/countersign/countersign/internal/pgtest"
	"github.com/countersign/countersign/journal"
)

// A flush of another process holds PostgreSQL's audit lock (an advisory lock
// on a connection of its own), or a write of an older binary does: this
// journal's writes do not wait for it. Their records wait in audit_pending,
// and are chained once the lock is let go, by the journal's flusher, without
// anyone asking.
func TestAWriterDoesNotWaitForAnotherProcesssAuditLock(t *testing.T) {
	t.Parallel()
	name := pgtest.Fresh(t)
	ctx := context.Background()
	j := openWith(t, name, journal.WithFlushEvery(20*time.Millisecond))
	_, op := newOp(t, j)
	if err := j.FlushAudit(ctx); err != nil {
		t.Fatal(err)
	}
	db := raw(t, name)
	count := counter(ctx, t, db)
	chained := count("audit")
	other, err := db.Conn(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer other.Close()
	k1, k2 := j.WriteLock()
	if _, err := other.ExecContext(ctx, "SELECT pg_advisory_lock($1, $2)", k1, k2); err != nil {
		t.Fatal(err)
	}
	short, cancel := context.WithTimeout(ctx, 5*time.Second)
	defer cancel()
	for _, m := range []journal.Move{{From: journal.Prepared, To: journal.Verified}, {From: journal.Verified, To: journal.Approved}} {
		if err := j.Move(short, op.ID, m); err != nil {
			t.Fatalf("a write while another process holds the audit lock: %v", err)
		}
	}
	if got := count("audit_pending"); got < 2 || count("audit") != chained {
		t.Errorf("while the lock is held: %d records pending, %d chained; want the moves' 2 pending and none chained", got, count("audit")-chained)
	}
	if _, err := other.ExecContext(ctx, "SELECT pg_advisory_unlock($1, $2)", k1, k2); err != nil {
		t.Fatal(err)
	}
	deadline := time.Now().Add(10 * time.Second)
	for count("audit_pending") > 0 {
		if time.Now().After(deadline) {
			t.Fatal("the pending records were not chained within 10 s of the lock's release")
		}
		time.Sleep(10 * time.Millisecond)
	}
	if rep := verify(t, j); rep.Fault != nil || rep.Records != int64(chained+2) {
		t.Errorf("the trail: %+v (%v), want %d records intact", rep, rep.Fault, chained+2)
	}
}

// Operations are filtered by target on both backends (the payload's target is
// read from its JSON: json_extract on SQLite, ->> on PostgreSQL).
func TestOperationsFilterByTarget(t *testing.T) {
	t.Parallel()
	forEachBackend(t, testOperationsFilterByTarget)
}

func testOperationsFilterByTarget(t *testing.T, name string) {
	ctx := context.Background()
	j := open(t, name, time.Now)
	task, _ := newOp(t, j) // to 222
	var want []string
	for _, target := range []string{"333", "@channel", "333"} {
		op, err := j.CreateOperation(ctx, journal.Operation{TaskID: task.ID, Tool: "commit_send_message", Transport: "telegram",
			Payload: action.Payload{Action: "send_message", Target: target, Text: "to " + target}}, "prepared")
		if err != nil {
			t.Fatal(err)
		}
		if target == "333" {
			want = append(want, op.ID)
		}
	}
	ops, err := j.Operations(ctx, journal.Filter{Target: "333"})
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, op := range ops {
		got = append(got, op.ID)
	}
	slices.Sort(got)
	slices.Sort(want)
	if !slices.Equal(got, want) {
		t.Errorf("Operations(target 333) = %v, want %v", got, want)
	}
}

// A renewal covers the updates a replica received and has not handled yet, as
// well as its operations: within the renewed lease no other replica takes them.
func TestRenewalsCoverReceivedUpdates(t *testing.T) {
	t.Parallel()
	forEachBackend(t, testRenewalsCoverReceivedUpdates)
}

func testRenewalsCoverReceivedUpdates(t *testing.T, name string) {
	ctx := context.Background()
	c := newClock()
	r1, r2 := replica(t, name, "r1", c), replica(t, name, "r2", c)
	if _, err := r1.Receive(ctx, []journal.InboxItem{{UpdateID: 1, Body: []byte(`{"update_id":1}`)}}); err != nil {
		t.Fatal(err)
	}
	c.Add(8 * time.Second)
	if err := r1.RenewLeases(ctx); err != nil {
		t.Fatal(err)
	}
	c.Add(8 * time.Second) // 16 s after receiving, 8 s after the renewal
	if got, err := r2.ClaimUpdates(ctx, 10, false); err != nil || len(got) != 0 {
		t.Errorf("within the renewed lease: r2 claimed %v, %v; want nothing", got, err)
	}
	c.Add(3 * time.Second)
	if got, err := r2.ClaimUpdates(ctx, 10, false); err != nil || len(got) != 1 {
		t.Errorf("past the renewed lease: r2 claimed %v, %v; want the update", got, err)
	}
}

// RecoverExpired checks the lease again inside the transaction that moves the
// commit: a renewal committed between its look and its move keeps the commit
// where it is. (The renewal is written from another connection right before the
// check, as another replica's would be.)
func TestTheLeaseIsCheckedAgainInsideTheMove(t *testing.T) {
	t.Parallel()
	name := pgtest.Fresh(t)
	ctx := context.Background()
	c := newClock()
	r1 := replica(t, name, "r1", c)
	_, op := newOp(t, r1)
	committing(t, r1, op)
	db, err := sql.Open("pgx", name)
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	var calls atomic.Int32
	clock := func() time.Time {
		now := c.Now()
		if calls.Add(1) == 2 { // the look is done; the move's check is next
			renewed := now.Add(10 * time.Second).UnixMilli()
			if _, err := db.ExecContext(ctx, "UPDATE operations SET lease_until = $1 WHERE id = $2", renewed, op.ID); err != nil {
				t.Error(err)
			}
		}
		return now
	}
	r2 := openWith(t, name, journal.WithClock(c.Now), journal.WithLeaseClock(clock))
	if err := r2.Join(ctx, "telegram", "r2", 10*time.Second); err != nil {
		t.Fatal(err)
	}
	c.Add(11 * time.Second)
	moved, err := r2.RecoverExpired(ctx, "telegram")
	if err != nil || len(moved) != 0 {
		t.Errorf("RecoverExpired across a renewal = %v, %v; want nothing moved", moved, err)
	}
	if got, _ := r2.Operation(ctx, op.ID); got.State != journal.Committing {
		t.Errorf("the renewed commit is %s, want committing", got.State)
	}
}

// A burst of writes waits for the journal's connections instead of opening one
// per statement: a cluster under load must not reach the server's
// max_connections, past which every statement of every replica fails.
func TestABurstStaysWithinTheConnectionBound(t *testing.T) {
	t.Parallel()
	name := pgtest.Fresh(t)
	app := fmt.Sprintf("cs_bound_%d", time.Now().UnixNano())
	j := openWith(t, name+"&application_name="+app)
	ctx := context.Background()
	db, err := sql.Open("pgx", pgtest.ServerURL())
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	var most atomic.Int64
	stop := make(chan struct{})
	watched := make(chan struct{})
	go func() {
		defer close(watched)
		for {
			var n int64
			if err := db.QueryRowContext(ctx, "SELECT count(*) FROM pg_stat_activity WHERE application_name = $1", app).Scan(&n); err == nil && n > most.Load() {
				most.Store(n)
			}
			select {
			case <-stop:
				return
			default:
			}
		}
	}()
	var wg sync.WaitGroup
	for range 64 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for range 5 {
				newOp(t, j)
			}
		}()
	}
	wg.Wait()
	close(stop)
	<-watched
	if bound := int64(journal.MaxConns); most.Load() > bound || most.Load() == 0 {
		t.Fatalf("64 writers at once held %d connections at most, want 1..%d", most.Load(), bound)
	}
	// A burst on a loaded machine may stay under the bound by chance: the
	// pools say what they would refuse to open.
	if durable, lazy := j.PoolBounds(); durable == 0 || lazy == 0 || durable+lazy > journal.MaxConns {
		t.Errorf("the pools are bounded at %d and %d connections (0: none), want both bounded, %d in all at most", durable, lazy, journal.MaxConns)
	}
}
