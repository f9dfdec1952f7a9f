package journal_test

import (
	"path/filepath"
	"testing"

	"github.com/countersign/countersign/internal/pgtest"
	"github.com/countersign/countersign/internal/skips"
)

// backends are the stores the shared suite runs on: each gives the name Open
// takes of a fresh, empty journal of the test's own.
var backends = []struct {
	name  string
	fresh func(t *testing.T) string
}{
	{"sqlite", func(t *testing.T) string { return filepath.Join(t.TempDir(), "j.db") }},
	{"postgres", func(t *testing.T) string { return pgtest.Fresh(t) }},
}

// forEachBackend runs test once per backend, as a subtest named after it, with
// the name of a fresh journal. Reopening that name reopens the same journal.
// The shared suite again on PostgreSQL is the PostgreSQL matrix, a long suite;
// what only PostgreSQL does (replicas, leases, racing writers: the tests that
// take backends[1] alone) runs in the quick one.
func forEachBackend(t *testing.T, test func(t *testing.T, name string)) {
	for _, b := range backends {
		t.Run(b.name, func(t *testing.T) {
			t.Parallel()
			if b.name != "sqlite" {
				skips.Long(t, "the journal's shared suite on PostgreSQL")
			}
			test(t, b.fresh(t))
		})
	}
}
