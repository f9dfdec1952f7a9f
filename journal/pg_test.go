package journal_test

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"slices"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/countersign/countersign/internal/pgtest"
	"github.com/countersign/countersign/journal"
	"github.com/countersign/countersign/tools"
)

// A writer of another process holds PostgreSQL's audit lock (an advisory lock
// on a connection of its own), as an append about to commit does, or a whole
// write of an older binary: this journal's write, which appends a record, waits
// for it at its append, a write whose context ends stops waiting and changes
// nothing, and the write goes through once the other writer lets go. Reads do
// not wait.
func TestAWriterWaitsForAnotherProcesssWriteLock(t *testing.T) {
	name := backends[1].fresh(t)
	ctx := context.Background()
	j := open(t, name, time.Now)
	_, op := newOp(t, j)
	db, err := sql.Open("pgx", name)
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	other, err := db.Conn(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer other.Close()
	k1, k2 := j.WriteLock()
	if _, err := other.ExecContext(ctx, "SELECT pg_advisory_lock($1, $2)", k1, k2); err != nil {
		t.Fatal(err)
	}
	if _, err := j.Operation(ctx, op.ID); err != nil {
		t.Errorf("a read while another process writes: %v", err)
	}
	short, cancel := context.WithTimeout(ctx, 200*time.Millisecond)
	defer cancel()
	err = j.Move(short, op.ID, journal.Move{From: journal.Prepared, To: journal.Verified})
	if !errors.Is(err, context.DeadlineExceeded) {
		t.Errorf("a write whose context ended while it waited = %v, want DeadlineExceeded", err)
	}
	if got, _ := j.Operation(ctx, op.ID); got.State != journal.Prepared {
		t.Fatalf("after the abandoned write: %s, want prepared", got.State)
	}
	var moved atomic.Bool
	done := make(chan error, 1)
	go func() {
		err := j.Move(ctx, op.ID, journal.Move{From: journal.Prepared, To: journal.Verified})
		moved.Store(true)
		done <- err
	}()
	// The write is waiting for the lock, as the server sees it.
	deadline := time.Now().Add(10 * time.Second)
	for {
		var waiting int
		err := db.QueryRowContext(ctx, `SELECT count(*) FROM pg_locks WHERE locktype = 'advisory' AND NOT granted
			AND classid = CAST($1 AS BIGINT)::oid AND objid = CAST($2 AS BIGINT)::oid`, k1, k2).Scan(&waiting)
		if err != nil {
			t.Fatal(err)
		}
		if waiting > 0 || moved.Load() || time.Now().After(deadline) {
			break
		}
		time.Sleep(10 * time.Millisecond)
	}
	if moved.Load() {
		t.Fatal("a write went through while another process held the write lock")
	}
	if _, err := other.ExecContext(ctx, "SELECT pg_advisory_unlock($1, $2)", k1, k2); err != nil {
		t.Fatal(err)
	}
	select {
	case err := <-done:
		if err != nil {
			t.Fatal(err)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("the write still waits after the other process let go")
	}
	if got, _ := j.Operation(ctx, op.ID); got.State != journal.Verified {
		t.Errorf("after the lock was free: %s, want verified", got.State)
	}
}

// Operations are filtered by target on both backends (the payload's target is
// read from its JSON: json_extract on SQLite, ->> on PostgreSQL).
func TestOperationsFilterByTarget(t *testing.T) { forEachBackend(t, testOperationsFilterByTarget) }

func testOperationsFilterByTarget(t *testing.T, name string) {
	ctx := context.Background()
	j := open(t, name, time.Now)
	task, _ := newOp(t, j) // to 222
	var want []string
	for _, target := range []string{"333", "@channel", "333"} {
		op, err := j.CreateOperation(ctx, journal.Operation{TaskID: task.ID, Tool: "commit_send_message", Transport: "telegram",
			Payload: tools.Payload{Action: "send_message", Target: target, Text: "to " + target}}, "prepared")
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
	forEachBackend(t, testRenewalsCoverReceivedUpdates)
}

func testRenewalsCoverReceivedUpdates(t *testing.T, name string) {
	ctx := context.Background()
	c := newClock()
	r1, r2 := replica(t, name, "r1", c), replica(t, name, "r2", c)
	if _, err := r1.Receive(ctx, []journal.InboxItem{{UpdateID: 1, Body: []byte(`{"update_id":1}`)}}); err != nil {
		t.Fatal(err)
	}
	c.add(8 * time.Second)
	if err := r1.Renew(ctx); err != nil {
		t.Fatal(err)
	}
	c.add(8 * time.Second) // 16 s after receiving, 8 s after the renewal
	if got, err := r2.ClaimUpdates(ctx, 10, false); err != nil || len(got) != 0 {
		t.Errorf("within the renewed lease: r2 claimed %v, %v; want nothing", got, err)
	}
	c.add(3 * time.Second)
	if got, err := r2.ClaimUpdates(ctx, 10, false); err != nil || len(got) != 1 {
		t.Errorf("past the renewed lease: r2 claimed %v, %v; want the update", got, err)
	}
}

// RecoverExpired checks the lease again inside the transaction that moves the
// commit: a renewal committed between its look and its move keeps the commit
// where it is. (The renewal is written from another connection right before the
// check, as another replica's would be.)
func TestTheLeaseIsCheckedAgainInsideTheMove(t *testing.T) {
	name := backends[1].fresh(t)
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
		now := c.now()
		if calls.Add(1) == 2 { // the look is done; the move's check is next
			renewed := now.Add(10 * time.Second).UnixMilli()
			if _, err := db.ExecContext(ctx, "UPDATE operations SET lease_until = $1 WHERE id = $2", renewed, op.ID); err != nil {
				t.Error(err)
			}
		}
		return now
	}
	r2 := openWith(t, name, journal.WithClock(c.now), journal.WithLeaseClock(clock))
	if err := r2.Join(ctx, "telegram", "r2", 10*time.Second); err != nil {
		t.Fatal(err)
	}
	c.add(11 * time.Second)
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
}
