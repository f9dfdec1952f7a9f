package coord_test

import (
	"context"
	"path/filepath"
	"sync"
	"testing"
	"time"

	"github.com/countersign/countersign/coord"
	"github.com/countersign/countersign/internal/pgtest"
	"github.com/countersign/countersign/internal/skips"
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
func replica(t *testing.T, name, r string, c *clock) member {
	t.Helper()
	m := open(t, name, c.now)
	if err := m.Join(context.Background(), "telegram", r, 10*time.Second); err != nil {
		t.Fatalf("join as %s: %v", r, err)
	}
	if err := m.Joined(context.Background()); err != nil {
		t.Fatalf("joined as %s: %v", r, err)
	}
	return m
}

// clock is a moving clock that several journals share, as replicas share time.
type clock struct {
	mu sync.Mutex
	t  time.Time
}

func newClock() *clock { return &clock{t: time.Date(2026, 12, 2, 9, 0, 0, 0, time.UTC)} }

func (c *clock) now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.t
}

func (c *clock) add(d time.Duration) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.t = c.t.Add(d)
}

// backends are the stores the tests run on: each gives the name journal.Open
// takes of a fresh, empty journal of the test's own.
var backends = []struct {
	name  string
	fresh func(t *testing.T) string
}{
	{"sqlite", func(t *testing.T) string { return filepath.Join(t.TempDir(), "j.db") }},
	{"postgres", func(t *testing.T) string { return pgtest.Fresh(t) }},
}

// forEachBackend runs test once per backend, as a subtest named after it, with
// the name of a fresh journal; on PostgreSQL as a long suite, as the journal's.
func forEachBackend(t *testing.T, test func(t *testing.T, name string)) {
	for _, b := range backends {
		t.Run(b.name, func(t *testing.T) {
			t.Parallel()
			if b.name != "sqlite" {
				skips.Long(t, "coord's shared suite on PostgreSQL")
			}
			test(t, b.fresh(t))
		})
	}
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
