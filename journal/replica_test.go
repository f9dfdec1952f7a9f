package journal_test

import (
	"context"
	"database/sql"
	"errors"
	"slices"
	"testing"
	"time"

	"github.com/countersign/countersign/internal/pgtest"
	"github.com/countersign/countersign/internal/testclock"
	"github.com/countersign/countersign/journal"
)

// newClock is the moving clock several journals of a test share, as
// replicas share time.
func newClock() *testclock.Clock { return testclock.New(time.Date(2026, 12, 2, 9, 0, 0, 0, time.UTC)) }

// replica opens the journal at name as replica r of telegram, with a 10 s lease.
func replica(t *testing.T, name, r string, c *testclock.Clock) *journal.Journal {
	t.Helper()
	j := open(t, name, c.Now)
	if err := j.Join(context.Background(), "telegram", r, 10*time.Second); err != nil {
		t.Fatalf("join as %s: %v", r, err)
	}
	return j
}

func lastTransition(t *testing.T, j *journal.Journal, id string) journal.Transition {
	t.Helper()
	ts, err := j.Transitions(context.Background(), id)
	if err != nil || len(ts) == 0 {
		t.Fatalf("transitions of %s: %v %v", id, ts, err)
	}
	return ts[len(ts)-1]
}

// A replica that dies with a request out leaves its commit to the others: once
// its lease is past, and not before, another replica moves it to unknown with
// the reason lease_expired. A renewal in time keeps the commit where it is.
func TestALeaseRunsOutBeforeAnotherReplicaRecovers(t *testing.T) {
	t.Parallel()
	forEachBackend(t, testALeaseRunsOutBeforeAnotherReplicaRecovers)
}

func testALeaseRunsOutBeforeAnotherReplicaRecovers(t *testing.T, name string) {
	ctx := context.Background()
	c := newClock()
	r1, r2 := replica(t, name, "r1", c), replica(t, name, "r2", c)
	_, op := newOp(t, r1)
	committing(t, r1, op)
	got, _ := r2.Operation(ctx, op.ID)
	if got.ClaimedBy != "r1" || !got.LeaseUntil.Equal(c.Now().Add(10*time.Second)) {
		t.Fatalf("claim = %q until %v, want r1 until now+10s", got.ClaimedBy, got.LeaseUntil)
	}
	c.Add(8 * time.Second)
	if moved, err := r2.RecoverExpired(ctx, "telegram"); err != nil || len(moved) != 0 {
		t.Fatalf("within the lease: RecoverExpired = %v, %v; want nothing", moved, err)
	}
	if err := r1.RenewLeases(ctx); err != nil {
		t.Fatal(err)
	}
	c.Add(8 * time.Second) // 16 s after the claim, 8 s after the renewal
	if moved, err := r2.RecoverExpired(ctx, "telegram"); err != nil || len(moved) != 0 {
		t.Fatalf("after a renewal: RecoverExpired = %v, %v; want nothing", moved, err)
	}
	// The holder never recovers its own commit: it is on the wire here.
	c.Add(time.Minute)
	if moved, _ := r1.RecoverExpired(ctx, "telegram"); len(moved) != 0 {
		t.Fatalf("the holder recovered its own commit: %v", moved)
	}
	moved, err := r2.RecoverExpired(ctx, "telegram")
	if err != nil || !slices.Equal(moved, []string{op.ID}) {
		t.Fatalf("past the lease: RecoverExpired = %v, %v; want %s", moved, err, op.ID)
	}
	got, _ = r2.Operation(ctx, op.ID)
	last := lastTransition(t, r2, op.ID)
	if got.State != journal.Unknown || last.From != journal.Committing || last.Reason != journal.ReasonLeaseExpired {
		t.Errorf("after recovery: %s, last %+v; want unknown by %s", got.State, last, journal.ReasonLeaseExpired)
	}
	as, _ := r2.Attempts(ctx, op.ID)
	if len(as) != 1 || as[0].Outcome != "interrupted" || as[0].Detail != "replica r1 stopped renewing its lease" {
		t.Errorf("attempts = %+v, want one interrupted, naming r1", as)
	}
	// The late holder cannot report a delivery over it: the move is a compare-and-set.
	err = r1.Move(ctx, op.ID, journal.Move{From: journal.Committing, To: journal.Committed})
	if !errors.Is(err, journal.ErrStateChanged) {
		t.Errorf("the late holder's move = %v, want ErrStateChanged", err)
	}
}

// A replica name is one process at a time; a process that comes back under the
// name of a dead one recovers that one's commits at once, without waiting out
// the lease (nothing of a dead process can still be on the wire).
func TestAReplicaNameIsOneProcess(t *testing.T) {
	t.Parallel()
	forEachBackend(t, testAReplicaNameIsOneProcess)
}

func testAReplicaNameIsOneProcess(t *testing.T, name string) {
	ctx := context.Background()
	c := newClock()
	r1 := replica(t, name, "r1", c)
	other := replica(t, name, "r2", c)
	_, mine := newOp(t, r1)
	committing(t, r1, mine)
	_, theirs := newOp(t, other)
	committing(t, other, theirs)

	second := open(t, name, c.Now)
	if err := second.Join(ctx, "telegram", "r1", 0); !errors.Is(err, journal.ErrReplicaRunning) {
		t.Fatalf("a second r1 = %v, want ErrReplicaRunning", err)
	}
	r1.Close() // as the kernel does for a killed process
	again := open(t, name, c.Now)
	if err := again.Join(ctx, "telegram", "r1", 0); err != nil {
		t.Fatalf("r1 again after the first closed: %v", err)
	}
	if got := again.Recovered(); !slices.Equal(got, []string{mine.ID}) {
		t.Errorf("recovered at join = %v, want only r1's own commit %s", got, mine.ID)
	}
	if last := lastTransition(t, again, mine.ID); last.To != journal.Unknown || last.Reason != journal.ReasonCrashRecovery {
		t.Errorf("r1's commit: last %+v, want unknown by %s", last, journal.ReasonCrashRecovery)
	}
	if got, _ := again.Operation(ctx, theirs.ID); got.State != journal.Committing {
		t.Errorf("r2's live commit is %s, want it left committing", got.State)
	}
	for _, bad := range []string{"", "a/b", "-x", string(make([]byte, 65))} {
		if err := open(t, name, c.Now).Join(ctx, "telegram", bad, 0); err == nil {
			t.Errorf("Join as %q succeeded, want a bad name", bad)
		}
	}
}

// Updates a replica received and never handled are taken over by another once
// its lease is past, in the order they were received; handled ones never are,
// and a process that comes back under the dead one's name takes its own at once.
func TestUpdatesOfADeadReplicaAreClaimedOnce(t *testing.T) {
	t.Parallel()
	forEachBackend(t, testUpdatesOfADeadReplicaAreClaimedOnce)
}

func testUpdatesOfADeadReplicaAreClaimedOnce(t *testing.T, name string) {
	ctx := context.Background()
	c := newClock()
	r1, r2 := replica(t, name, "r1", c), replica(t, name, "r2", c)
	items := []journal.InboxItem{{UpdateID: 3, Key: "message:1:3"}, {UpdateID: 1, Key: "message:1:1"}, {UpdateID: 2, Key: "message:1:2"}}
	for _, it := range items {
		it.Body = []byte(`{"update_id":1}`)
		if _, err := r1.Receive(ctx, []journal.InboxItem{it}); err != nil {
			t.Fatal(err)
		}
		c.Add(time.Millisecond)
	}
	if err := r1.Handled(ctx, "message:1:1"); err != nil {
		t.Fatal(err)
	}
	// A second delivery to the other replica is a no-op.
	if fresh, err := r2.Receive(ctx, []journal.InboxItem{{UpdateID: 3, Key: "message:1:3", Body: []byte(`{}`)}}); err != nil || len(fresh) != 0 {
		t.Fatalf("the same update at r2: fresh %v, %v; want none", fresh, err)
	}
	if got, err := r2.ClaimUpdates(ctx, 10, false); err != nil || len(got) != 0 {
		t.Fatalf("within r1's lease: claimed %v, %v; want none", got, err)
	}
	c.Add(11 * time.Second)
	got, err := r2.ClaimUpdates(ctx, 10, false)
	if err != nil {
		t.Fatal(err)
	}
	if keys := inboxKeys(got); !slices.Equal(keys, []string{"message:1:3", "message:1:2"}) {
		t.Fatalf("claimed %v, want r1's unhandled updates in the order received", keys)
	}
	if again, _ := r2.ClaimUpdates(ctx, 10, false); len(again) != 0 {
		t.Errorf("claimed twice: %v", inboxKeys(again))
	}
	// r1 comes back: r2 holds them now, so it takes none.
	r1.Close()
	back := open(t, name, c.Now)
	if err := back.Join(ctx, "telegram", "r1", 10*time.Second); err != nil {
		t.Fatal(err)
	}
	if own, _ := back.ClaimUpdates(ctx, 10, true); len(own) != 0 {
		t.Errorf("r1 back took %v, which r2 holds", inboxKeys(own))
	}
	// r2 dies in turn and comes back: it takes its own at once.
	r2.Close()
	r2 = open(t, name, c.Now)
	if err := r2.Join(ctx, "telegram", "r2", 10*time.Second); err != nil {
		t.Fatal(err)
	}
	if own, _ := r2.ClaimUpdates(ctx, 10, true); len(own) != 2 {
		t.Errorf("r2 back took %v, want its two", inboxKeys(own))
	}
	// A journal that is no replica claims nothing.
	if got, err := open(t, name, c.Now).ClaimUpdates(ctx, 10, true); err != nil || got != nil {
		t.Errorf("no replica: claimed %v, %v", got, err)
	}
}

func inboxKeys(items []journal.InboxItem) []string {
	var keys []string
	for _, it := range items {
		keys = append(keys, it.Key)
	}
	return keys
}

// One replica at a time leads; another leads once it is gone.
func TestOneReplicaLeads(t *testing.T) {
	t.Parallel()
	forEachBackend(t, testOneReplicaLeads)
}

func testOneReplicaLeads(t *testing.T, name string) {
	ctx := context.Background()
	c := newClock()
	r1, r2 := replica(t, name, "r1", c), replica(t, name, "r2", c)
	if ok, err := r1.Lead(ctx, "telegram"); !ok || err != nil {
		t.Fatalf("r1 Lead = %v, %v; want the lead", ok, err)
	}
	if ok, err := r2.Lead(ctx, "telegram"); ok || err != nil {
		t.Fatalf("r2 Lead = %v, %v; want no lead while r1 leads", ok, err)
	}
	if !r1.Leading(ctx, "telegram") || r2.Leading(ctx, "telegram") {
		t.Fatal("Leading disagrees with Lead")
	}
	if _, owned, _ := r2.Owner("telegram"); !owned {
		t.Error("Owner does not see the leader: countersign mcp would say no bot runs")
	}
	if err := r1.Resign("telegram"); err != nil {
		t.Fatal(err)
	}
	if ok, err := r2.Lead(ctx, "telegram"); !ok || err != nil {
		t.Fatalf("r2 Lead after r1 resigned = %v, %v", ok, err)
	}
	r2.Close()
	if ok, err := r1.Lead(ctx, "telegram"); !ok || err != nil {
		t.Fatalf("r1 Lead after r2 closed = %v, %v", ok, err)
	}
}

// On PostgreSQL a leader whose session the server ended (a network cut, a
// restart) learns that it leads no more, and another replica takes the lead.
func TestALeaderWhoseSessionEndedStepsDown(t *testing.T) {
	t.Parallel()
	name := pgtest.Fresh(t)
	ctx := context.Background()
	c := newClock()
	r1, r2 := replica(t, name, "r1", c), replica(t, name, "r2", c)
	if ok, _ := r1.Lead(ctx, "telegram"); !ok {
		t.Fatal("r1 does not lead")
	}
	// End the leader's lock session, as a network cut would.
	classid, objid := r1.LeadLock("telegram")
	endSession(t, name, classid, objid)
	deadline := time.Now().Add(10 * time.Second)
	for r1.Leading(ctx, "telegram") {
		if time.Now().After(deadline) {
			t.Fatal("r1 still believes it leads 10 s after its session ended")
		}
		time.Sleep(50 * time.Millisecond)
	}
	if ok, err := r2.Lead(ctx, "telegram"); !ok || err != nil {
		t.Errorf("r2 Lead after r1's session ended = %v, %v", ok, err)
	}
}

// Card edits any replica asks for are kept in the order asked until the leader
// makes them.
func TestCardEditsWaitInOrder(t *testing.T) {
	t.Parallel()
	forEachBackend(t, testCardEditsWaitInOrder)
}

func testCardEditsWaitInOrder(t *testing.T, name string) {
	ctx := context.Background()
	c := newClock()
	r1, r2 := replica(t, name, "r1", c), replica(t, name, "r2", c)
	for i, j := range []*journal.Journal{r1, r2, r1} {
		if err := j.AskCardEdit(ctx, "ap-x", string(rune('a'+i))); err != nil {
			t.Fatal(err)
		}
	}
	edits, err := r2.CardEdits(ctx, 10)
	if err != nil || len(edits) != 3 || edits[0].Line != "a" || edits[1].Line != "b" || edits[2].Line != "c" {
		t.Fatalf("CardEdits = %+v, %v; want a, b, c in order", edits, err)
	}
	if err := r2.CardEditMade(ctx, edits[0].Seq); err != nil {
		t.Fatal(err)
	}
	if left, _ := r1.CardEdits(ctx, 10); len(left) != 2 || left[0].Line != "b" {
		t.Errorf("after one was made: %+v, want b, c", left)
	}
}

// A replica that stops frees its approved work and unhandled updates at once;
// its commits stay claimed, to be recovered as any other.
func TestReleaseFreesAllButCommits(t *testing.T) {
	t.Parallel()
	forEachBackend(t, testReleaseFreesAllButCommits)
}

func testReleaseFreesAllButCommits(t *testing.T, name string) {
	ctx := context.Background()
	c := newClock()
	r1, r2 := replica(t, name, "r1", c), replica(t, name, "r2", c)
	_, wire := newOp(t, r1)
	committing(t, r1, wire)
	_, approved := newOp(t, r1)
	for _, m := range []journal.Move{{From: journal.Prepared, To: journal.Verified}, {From: journal.Verified, To: journal.Approved}} {
		if err := r1.Move(ctx, approved.ID, m); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := r1.Receive(ctx, []journal.InboxItem{{UpdateID: 1, Key: "message:1:1", Body: []byte(`{}`)}}); err != nil {
		t.Fatal(err)
	}
	if err := r1.Release(ctx); err != nil {
		t.Fatal(err)
	}
	if op, _ := r2.Operation(ctx, approved.ID); !op.LeaseUntil.IsZero() {
		t.Errorf("approved work still leased until %v", op.LeaseUntil)
	}
	if op, _ := r2.Operation(ctx, wire.ID); !op.LeaseUntil.After(c.Now()) {
		t.Errorf("the commit's lease was given up: %v", op.LeaseUntil)
	}
	if moved, _ := r2.RecoverExpired(ctx, "telegram"); len(moved) != 0 {
		t.Errorf("a released replica's live commit was recovered: %v", moved)
	}
	if got, _ := r2.ClaimUpdates(ctx, 10, false); len(got) != 1 {
		t.Errorf("r2 claimed %v, want r1's released update", inboxKeys(got))
	}
}

// endSession ends, from another connection, the PostgreSQL session that holds
// the advisory lock (classid, objid) in the database at name, as a network cut
// or a server restart would.
func endSession(t *testing.T, name string, classid, objid int64) {
	t.Helper()
	db, err := sql.Open("pgx", name)
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	_, err = db.Exec(`SELECT pg_terminate_backend(l.pid) FROM pg_locks l
		WHERE l.locktype = 'advisory' AND l.objsubid = 2 AND l.granted
		AND l.classid = CAST($1 AS BIGINT)::oid AND l.objid = CAST($2 AS BIGINT)::oid`, classid, objid)
	if err != nil {
		t.Fatal(err)
	}
}
