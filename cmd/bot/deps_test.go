package main

import (
	"os/exec"
	"strings"
	"testing"
)

// The binary links no test code: not the testing package, nor httptest, nor
// any of the project's test helpers (their names end in "test", or they are
// the fakes under internal/). The demo's Telegram is product code
// (telegram/standin).
func TestTheBinaryLinksNoTestCode(t *testing.T) {
	if _, err := exec.LookPath("go"); err != nil {
		t.Skip("go tool not on PATH")
	}
	out, err := exec.Command("go", "list", "-deps", ".").Output()
	if err != nil {
		t.Fatalf("go list -deps: %v", err)
	}
	const module = "github.com/countersign/countersign/"
	deps := strings.Fields(string(out))
	for _, dep := range deps {
		ours := strings.TrimPrefix(dep, module)
		switch {
		case dep == "testing", strings.HasPrefix(dep, "testing/"), dep == "net/http/httptest":
			t.Errorf("the binary links %s", dep)
		case ours != dep && (strings.HasSuffix(ours, "test") || ours == "internal/fakeapi" || ours == "internal/partition"):
			t.Errorf("the binary links the test helper %s", dep)
		}
	}
	if len(deps) == 0 {
		t.Error("go list -deps listed nothing")
	}
}
