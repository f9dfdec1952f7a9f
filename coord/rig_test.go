package coord_test

import (
	"context"
	"testing"
	"time"

	"github.com/countersign/countersign/coord"
	"github.com/countersign/countersign/internal/pgtest"
	"github.com/countersign/countersign/internal/testclock"
	"github.com/countersign/countersign/journal"
)

// member is one process's journal and the shared state on it, as a replica
// holds both: its RenewLeases and Release are both parts' at once, as the
// operator renews and releases them.
type member struct {
	*journal.Journal
	*coord.Coord
}

func (m member) RenewLeases(ctx context.Context) error {
	if err := m.Journal.RenewLeases(ctx); err != nil {
		return err
	}
	return m.Coord.RenewLeases(ctx)
}

func (m member) Release(ctx context.Context) error {
	if err := m.Journal.Release(ctx); err != nil {
		return err
	}
	return m.Coord.Release(ctx)
}

// open opens the journal at path with now as its clock and its lease clock,
// closed when the test ends.
func open(t *testing.T, path string, now func() time.Time) member {
	t.Helper()
	return openWith(t, path, journal.WithClock(now), journal.WithLeaseClock(now))
}

// openWith opens the journal at path with opts, closed when the test ends.
func openWith(t *testing.T, path string, opts ...journal.Option) member {
	t.Helper()
	j, err := journal.Open(context.Background(), path, opts...)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { j.Close() })
	return member{j, coord.New(j)}
}

// replica opens the journal at name as replica r of telegram, with a 10 s
// lease, and drops what an earlier process of r left (Joined), as the binary
// does.
func replica(t *testing.T, name, r string, c *testclock.Clock) member {
	t.Helper()
	m := open(t, name, c.Now)
	if err := m.Join(context.Background(), "telegram", r, 10*time.Second); err != nil {
		t.Fatalf("join as %s: %v", r, err)
	}
	if err := m.Joined(context.Background()); err != nil {
		t.Fatalf("joined as %s: %v", r, err)
	}
	return m
}

// newClock is the moving clock several journals of a test share, as
// replicas share time.
func newClock() *testclock.Clock { return testclock.New(time.Date(2026, 12, 2, 9, 0, 0, 0, time.UTC)) }

// forEachBackend runs test on SQLite, and on PostgreSQL as a long suite.
func forEachBackend(t *testing.T, test func(t *testing.T, name string)) {
	pgtest.EachBackend(t, "coord's shared suite on PostgreSQL", test)
}

// counter counts a table's rows in m's database, or fails the test.
func counter(t *testing.T, m member) func(table string) int {
	return func(table string) (n int) {
		t.Helper()
		if err := m.Store().QueryRowContext(context.Background(), "SELECT count(*) FROM "+table).Scan(&n); err != nil {
			t.Fatal(err)
		}
		return n
	}
}
