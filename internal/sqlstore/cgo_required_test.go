package sqlstore_test

import (
	"os"
	"os/exec"
	"strings"
	"testing"
)

// Built where there is no C compiler (Go turns cgo off), the store stops the
// build with an error that says what is missing, before the driver's own.
func TestABuildWithoutCgoSaysItNeedsACCompiler(t *testing.T) {
	t.Parallel()
	if testing.Short() {
		t.Skip("builds the package again without cgo")
	}
	cmd := exec.Command("go", "build", "-o", os.DevNull, ".")
	cmd.Env = append(os.Environ(), "CGO_ENABLED=0")
	out, err := cmd.CombinedOutput()
	if err == nil {
		t.Fatal("the store built without cgo")
	}
	lines := strings.Split(string(out), "\n")
	if len(lines) < 2 || !strings.Contains(lines[1], "needs_a_C_compiler_for_SQLite__install_gcc") {
		t.Errorf("first error = %q, want the C compiler named first", out)
	}
}
