package audit_test

import (
	"strings"
	"testing"

	"github.com/countersign/countersign/internal/depstest"
)

// TestTheAuditPackageIsALeaf: an export and its receipts are checked offline
// by this package alone, so it trusts no code of ours and no library: it
// imports the standard library only (a package path without a dot in its
// first element), never the journal that writes the trail nor the passkey
// package that accepted the assertions it checks again.
func TestTheAuditPackageIsALeaf(t *testing.T) {
	t.Parallel()
	for _, dep := range depstest.Deps(t, depstest.Module+"/audit") {
		first, _, _ := strings.Cut(dep, "/")
		if dep != depstest.Module+"/audit" && (depstest.Ours(dep) || strings.Contains(first, ".")) {
			t.Errorf("audit depends on %s", dep)
		}
	}
}
