package journal_test

import (
	"testing"

	"github.com/countersign/countersign/internal/depstest"
)

// TestTheJournalKnowsOnlyTheContract: storage sits under everything that acts
// (DESIGN.md "Packages"). Of our packages it imports the contract (action),
// the audit chain, the policy, the second factor's arithmetic (stepup: a code
// is checked in the transaction that records it) and its SQL plumbing
// (internal/sqlstore), never
// the tools, the verifier or anything that sends, so what it stores cannot
// depend on how a tool works today.
func TestTheJournalKnowsOnlyTheContract(t *testing.T) {
	t.Parallel()
	allowed := map[string]bool{}
	for _, p := range []string{"journal", "action", "audit", "policy", "stepup", "internal/sqlstore"} {
		allowed[depstest.Module+"/"+p] = true
	}
	for _, dep := range depstest.Deps(t, depstest.Module+"/journal") {
		if depstest.Ours(dep) && !allowed[dep] {
			t.Errorf("journal depends on %s", dep)
		}
	}
}
