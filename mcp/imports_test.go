package mcp_test

import (
	"os/exec"
	"strings"
	"testing"

	"github.com/countersign/countersign/internal/depstest"
)

// TestOnlyTheBinaryImportsMCP keeps the surface a surface (DESIGN "Packages"):
// it imports nothing above the core and no other surface, and of our packages only
// cmd/bot imports it.
func TestOnlyTheBinaryImportsMCP(t *testing.T) {
	t.Parallel()
	const module = depstest.Module
	for _, dep := range depstest.Deps(t, module+"/mcp") {
		for _, above := range []string{"/cmd/", "/telegram", "/console", "/agent"} {
			if strings.HasPrefix(dep, module+above) {
				t.Errorf("mcp depends on %s", dep)
			}
		}
	}
	out, err := exec.Command("go", "list", "-f", `{{.ImportPath}} {{join .Imports " "}}`, module+"/...").Output()
	if err != nil {
		t.Fatalf("go list: %v", err)
	}
	for _, line := range strings.Split(strings.TrimSpace(string(out)), "\n") {
		pkg, imports, _ := strings.Cut(line, " ")
		if pkg != module+"/cmd/bot" && strings.Contains(" "+imports+" ", " "+module+"/mcp ") {
			t.Errorf("%s imports mcp; only cmd/bot may", pkg)
		}
	}
}
