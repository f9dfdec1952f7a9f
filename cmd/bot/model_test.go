package main

import (
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"
)

// TestModelCheckInTheFlow turns verify.model_check on for commit_send_message, with
// ANTHROPIC_BASE_URL at a local server that answers with a real Messages API body
// whose text asks for a repair: the console shows the model's reason, and nothing is
// sent or put up for approval.
func TestModelCheckInTheFlow(t *testing.T) {
	fixture, err := os.ReadFile("testdata/anthropic_message_end_turn.json")
	if err != nil {
		t.Fatal(err)
	}
	const verdict = `{\"decision\":\"repair\",\"reasons\":[\"the tone is too casual for this chat\"]}`
	body := strings.Replace(string(fixture), "The current temperature in San Francisco is 68 degrees Fahrenheit.", verdict, 1)
	var calls atomic.Int32
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		calls.Add(1)
		w.Header().Set("Content-Type", "application/json")
		w.Write([]byte(body))
	}))
	defer srv.Close()
	pol, _ := os.ReadFile("../../policies.yaml")
	withModel := strings.Replace(string(pol), "model_check: []", "model_check: [commit_send_message]", 1)
	policies := filepath.Join(t.TempDir(), "policies.yaml")
	os.WriteFile(policies, []byte(withModel), 0o600)
	env := map[string]string{"ANTHROPIC_API_KEY": "sk-ant-test-0000000000000000000000", "ANTHROPIC_BASE_URL": srv.URL}
	r := runMain(t, "/send 222 yo whats up\n", env, "console", "-data", t.TempDir(), "-policies", policies)
	if r.code != 0 || !strings.Contains(r.stdout, "model: the tone is too casual") {
		t.Fatalf("console: exit %d\n%s\n%s", r.code, r.stdout, r.stderr)
	}
	if strings.Contains(r.stdout, "Approve") || strings.Contains(r.stdout, "→ sent") || calls.Load() != 1 {
		t.Errorf("want no card, no send and one model request (got %d):\n%s", calls.Load(), r.stdout)
	}
	if strings.Contains(r.stdout+r.stderr, env["ANTHROPIC_API_KEY"]) {
		t.Error("the API key was printed")
	}
}
