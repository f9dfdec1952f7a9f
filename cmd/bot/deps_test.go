package main

import (
	"strings"
	"testing"

	"github.com/countersign/countersign/internal/depstest"
)

// The binary links no test code: not the testing package, nor httptest, nor
// any of the project's test helpers (their names end in "test", or they are
// the fakes under internal/). The demo's Telegram is product code
// (telegram/standin).
func TestTheBinaryLinksNoTestCode(t *testing.T) {
	for _, dep := range depstest.Deps(t, ".") {
		ours := strings.TrimPrefix(dep, depstest.Module+"/")
		switch {
		case dep == "testing", strings.HasPrefix(dep, "testing/"), dep == "net/http/httptest":
			t.Errorf("the binary links %s", dep)
		case ours != dep && (strings.HasSuffix(ours, "test") || ours == "internal/fakeapi" || ours == "internal/partition"):
			t.Errorf("the binary links the test helper %s", dep)
		}
	}
}
