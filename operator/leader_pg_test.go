package operator_test

import (
	"context"
	"database/sql"
	"hash/fnv"
	"net/url"
	"testing"
	"time"

	"github.com/countersign/countersign/internal/pgtest"
)

// A leader whose database session the server ended (a network cut, a restart)
// has lost its lock with it: it steps down at its next check, and one replica
// (another, or itself on a new session) leads again, on PostgreSQL, where the
// lock is the session's.
func TestALeaderWhoseSessionWasKilledStepsDown(t *testing.T) {
	t.Parallel()
	rs := newReplicas(t)
	if u, _ := url.Parse(rs.file); u == nil || u.Scheme != "postgres" {
		rs.file = pgtest.Fresh(t)
	}
	ctx := context.Background()
	r1, _ := rs.start("r1", nil, false)
	sweep(t, r1)
	waitUntil(t, "r1 leads", func() bool { ok, _ := r1.Leading(); return ok })
	r2, _ := rs.start("r2", nil, false)
	sweep(t, r2)

	db, err := sql.Open("pgx", rs.file)
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	classid, objid := leadLock(t, rs.file, transport)
	holder := func() (pid int) {
		db.QueryRowContext(ctx, `SELECT pid FROM pg_locks WHERE locktype = 'advisory' AND objsubid = 2 AND granted
			AND classid = CAST($1 AS BIGINT)::oid AND objid = CAST($2 AS BIGINT)::oid`, classid, objid).Scan(&pid)
		return pid
	}
	killed := holder()
	if killed == 0 {
		t.Fatal("nobody holds the lead lock while r1 leads")
	}
	if _, err := db.ExecContext(ctx, "SELECT pg_terminate_backend($1)", killed); err != nil {
		t.Fatal(err)
	}
	// A new session holds the lead, and exactly the replica it belongs to says it
	// leads: r1 stepped down (it may have led again at once, on a new session),
	// or r2 took over. A leader that missed the loss would lead beside r2.
	oneLeads := func() bool {
		one, _ := r1.Leading()
		two, _ := r2.Leading()
		pid := holder()
		return pid != 0 && pid != killed && one != two
	}
	waitUntil(t, "one replica leads, on a new session", oneLeads)
	// And so it is again ten watch periods on. A replica's view of its lead is
	// made once a watch, after its leases' renewal, so on a loaded machine it
	// may lag its lock by more than a period, and one look may catch the new
	// leader before it knows or the old one before it noticed; a leader that
	// missed the loss would lead beside the other for good.
	time.Sleep(10 * 5 * time.Millisecond)
	waitUntil(t, "one replica leads, ten watch periods on", oneLeads)
}

// leadLock is the advisory lock a leader of transport holds in the journal at
// url: the journal's lock of ownership (0x43530003), keyed by the FNV-1a hash of
// the schema and the transport.
func leadLock(t *testing.T, journalURL, transport string) (int64, int64) {
	t.Helper()
	u, err := url.Parse(journalURL)
	if err != nil {
		t.Fatal(err)
	}
	h := fnv.New32a()
	h.Write([]byte(u.Query().Get("search_path") + "\x00" + transport))
	return 0x43530003, int64(h.Sum32() & 0x7fffffff)
}
