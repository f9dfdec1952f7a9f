package journal_test

import (
	"testing"

	"github.com/countersign/countersign/internal/pgtest"
)

// forEachBackend runs test once per backend, as a subtest named after it, with
// the name of a fresh journal. Reopening that name reopens the same journal.
// The shared suite again on PostgreSQL is the PostgreSQL matrix, a long suite;
// what only PostgreSQL does (replicas, leases, racing writers: the tests that
// take pgtest.Fresh alone) runs in the quick one.
func forEachBackend(t *testing.T, test func(t *testing.T, name string)) {
	pgtest.EachBackend(t, "the journal's shared suite on PostgreSQL", test)
}
