package verifier_test

import (
	"testing"

	"github.com/countersign/countersign/internal/depstest"
)

// TestImportsCannotSend proves the verifier cannot commit: none of its dependencies
// (the package's own, not this test's) sends, writes the journal or is another
// package of ours that could.
func TestImportsCannotSend(t *testing.T) {
	forbidden := map[string]bool{
		"net/http": true, "net/smtp": true, "os/exec": true, "database/sql": true,
		"github.com/mattn/go-sqlite3": true, "github.com/go-telegram/bot": true,
	}
	allowed := map[string]bool{depstest.Module + "/verifier": true, depstest.Module + "/policy": true}
	for _, dep := range depstest.Deps(t, depstest.Module+"/verifier") {
		if forbidden[dep] || depstest.Ours(dep) && !allowed[dep] {
			t.Errorf("verifier depends on %s", dep)
		}
	}
}
