// Package depstest lists a package's dependencies for the tests that keep the
// design's layering (DESIGN.md "Packages"): the verifier cannot send, the model
// layer cannot reach a tool, the journal knows only the contract, the binary
// links no test code.
package depstest

import (
	"os/exec"
	"strings"
	"testing"
)

// Module is the import path every package of ours starts with.
const Module = "github.com/countersign/countersign"

// Deps returns every package pkg (an import path, or "." for the test's own
// folder) depends on, itself included, as `go list -deps` prints them: its own
// imports, not its tests'. A test without the go tool on its PATH skips.
func Deps(t testing.TB, pkg string) []string {
	t.Helper()
	if _, err := exec.LookPath("go"); err != nil {
		t.Skip("go tool not on PATH")
	}
	out, err := exec.Command("go", "list", "-deps", pkg).Output()
	if err != nil {
		t.Fatalf("go list -deps %s: %v", pkg, err)
	}
	deps := strings.Fields(string(out))
	if len(deps) == 0 {
		t.Fatalf("go list -deps %s listed nothing", pkg)
	}
	return deps
}

// Ours reports whether the import path dep is a package of this module.
func Ours(dep string) bool {
	return dep == Module || strings.HasPrefix(dep, Module+"/")
}
