package verifier_test

import (
	"os/exec"
	"strings"
	"testing"
)

// TestImportsCannotSend proves the verifier cannot commit: none of its dependencies
// (the package's own, not this test's) sends, writes the journal or is another
// package of ours that could.
func TestImportsCannotSend(t *testing.T) {
	if _, err := exec.LookPath("go"); err != nil {
		t.Skip("go tool not on PATH")
	}
	const module = "github.com/countersign/countersign"
	out, err := exec.Command("go", "list", "-deps", module+"/verifier").Output()
	if err != nil {
		t.Fatalf("go list -deps: %v", err)
	}
	forbidden := map[string]bool{
		"net/http": true, "net/smtp": true, "os/exec": true, "database/sql": true,
		"github.com/mattn/go-sqlite3": true, "github.com/go-telegram/bot": true,
	}
	allowed := map[string]bool{module + "/verifier": true, module + "/policy": true}
	deps := strings.Fields(string(out))
	for _, dep := range deps {
		ours := dep == module || strings.HasPrefix(dep, module+"/")
		if forbidden[dep] || ours && !allowed[dep] {
			t.Errorf("verifier depends on %s", dep)
		}
	}
	if len(deps) == 0 {
		t.Error("go list -deps listed nothing")
	}
}
