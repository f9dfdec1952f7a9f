package sqlstore_test

import (
	"testing"

	"github.com/countersign/countersign/internal/depstest"
)

// The SQL plumbing knows no package of ours: it is what the journal and the
// replicas' shared state stand on, and knows nothing of what they store.
func TestTheStoreKnowsNothingOfOurs(t *testing.T) {
	t.Parallel()
	self := depstest.Module + "/internal/sqlstore"
	for _, dep := range depstest.Deps(t, self) {
		if depstest.Ours(dep) && dep != self {
			t.Errorf("sqlstore depends on %s", dep)
		}
	}
}
