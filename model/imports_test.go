package model_test

import (
	"os/exec"
	"strings"
	"testing"
)

// The model layer cannot reach a tool: of the project's packages it imports
// only policy, so a retried request can never run a tool, send, or write the
// journal (the loop that calls tools is package agent, above it).
func TestTheModelLayerCannotReachATool(t *testing.T) {
	t.Parallel()
	if _, err := exec.LookPath("go"); err != nil {
		t.Skip("go tool not on PATH")
	}
	const module = "github.com/countersign/countersign"
	out, err := exec.Command("go", "list", "-deps", module+"/model").Output()
	if err != nil {
		t.Fatalf("go list -deps: %v", err)
	}
	allowed := map[string]bool{module + "/model": true, module + "/policy": true}
	deps := strings.Fields(string(out))
	for _, dep := range deps {
		if (dep == module || strings.HasPrefix(dep, module+"/")) && !allowed[dep] {
			t.Errorf("model depends on %s", dep)
		}
	}
	if len(deps) == 0 {
		t.Error("go list -deps listed nothing")
	}
}
