package journal_test

import (
	"context"
	"testing"

	"github.com/countersign/countersign/internal/pgtest"
	"github.com/countersign/countersign/journal"
	"github.com/countersign/countersign/policy"
)

// sendRoundTrips is what a send's four write transactions cost on PostgreSQL
// in round trips: the first (task, operation, its first three moves, the
// approval, their audit records) goes in one; the decision reads the approval
// and its votes and makes two compare-and-sets before its commit (five); each
// move after it is its compare-and-set and its commit (two each). Before
// statements were pipelined, each was one, with BEGIN and COMMIT: 28.
const sendRoundTrips = 10

// A send on PostgreSQL takes sendRoundTrips round trips, not one per
// statement: the test fails when a step gains one.
func TestASendTakesTenRoundTripsOnPostgreSQL(t *testing.T) {
	t.Parallel()
	p, err := policy.Load("../policies.yaml")
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	j, err := journal.Open(ctx, pgtest.Fresh(t))
	if err != nil {
		t.Fatal(err)
	}
	defer j.Close()
	if err := send(ctx, j, p, 1); err != nil { // the statements' first preparation
		t.Fatal(err)
	}
	before := j.RoundTrips()
	if err := send(ctx, j, p, 2); err != nil {
		t.Fatal(err)
	}
	if got := j.RoundTrips() - before; got != sendRoundTrips {
		t.Errorf("a send took %d round trips, want %d", got, sendRoundTrips)
	}
}
