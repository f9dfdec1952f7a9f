package model_test

import (
	"testing"

	"github.com/countersign/countersign/internal/depstest"
)

// The model layer cannot reach a tool: of the project's packages it imports
// only policy, so a retried request can never run a tool, send, or write the
// journal (the loop that calls tools is package agent, above it).
func TestTheModelLayerCannotReachATool(t *testing.T) {
	t.Parallel()
	allowed := map[string]bool{depstest.Module + "/model": true, depstest.Module + "/policy": true}
	for _, dep := range depstest.Deps(t, depstest.Module+"/model") {
		if depstest.Ours(dep) && !allowed[dep] {
			t.Errorf("model depends on %s", dep)
		}
	}
}
