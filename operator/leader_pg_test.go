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

	_, changed := r1.Leading()
	db, err := sql.Open("pgx", rs.file)
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	classid, objid := leadLock(t, rs.file, transport)
	_, err = db.ExecContext(ctx, `SELECT pg_terminate_backend(pid) FROM pg_locks WHERE locktype = 'advisory' AND objsubid = 2
		AND granted AND classid = CAST($1 AS BIGINT)::oid AND objid = CAST($2 AS BIGINT)::oid`, classid, objid)
	if err != nil {
		t.Fatal(err)
	}
	select {
	case <-changed: // r1 stepped down; it may lead again, through a new session
	case <-time.After(10 * time.Second):
		t.Fatal("r1 still leads 10 s after its session was killed")
	}
	waitUntil(t, "one replica leads", func() bool {
		one, _ := r1.Leading()
		two, _ := r2.Leading()
		return one != two
	})
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
