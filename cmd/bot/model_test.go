package main

import (
	"net/http"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/countersign/countersign/agent/agenttest"
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
	srv := agenttest.NewServer(t, agenttest.Reply{Status: http.StatusOK, Body: []byte(body)})
	pol, _ := os.ReadFile("../../policies.yaml")
	withModel := strings.Replace(string(pol), "model_check: []", "model_check: [commit_send_message]", 1)
	policies := filepath.Join(t.TempDir(), "policies.yaml")
	os.WriteFile(policies, []byte(withModel), 0o600)
	env := map[string]string{"ANTHROPIC_API_KEY": "sk-ant-test-0000000000000000000000", "ANTHROPIC_BASE_URL": srv.URL}
	r := runMain(t, "/send 222 yo whats up\n", env, "console", "-data", t.TempDir(), "-policies", policies)
	if r.code != 0 || !strings.Contains(r.stdout, "model: the tone is too casual") {
		t.Fatalf("console: exit %d\n%s\n%s", r.code, r.stdout, r.stderr)
	}
	if strings.Contains(r.stdout, "Approve") || strings.Contains(r.stdout, "→ sent") || len(srv.Requests()) != 1 {
		t.Errorf("want no card, no send and one model request (got %d):\n%s", len(srv.Requests()), r.stdout)
	}
	if strings.Contains(r.stdout+r.stderr, env["ANTHROPIC_API_KEY"]) {
		t.Error("the API key was printed")
	}
}

// TestPlainTextGoesToTheModel configures a model and types plain text in the
// console: the model's commit_send_message call becomes an approval question, and only the approved text is sent, once. The model
// is asked once: the turn ends while the commit waits for the human.
func TestPlainTextGoesToTheModel(t *testing.T) {
	srv := agenttest.NewServer(t, agenttest.Message("tool_use", "I'll send it to the team chat.", agenttest.Send("222", "Standup moves to 10:30")))
	env := map[string]string{"ANTHROPIC_API_KEY": "sk-ant-test-0000000000000000000000", "ANTHROPIC_BASE_URL": srv.URL}
	r := runMain(t, "tell the team in 222 that standup moves to 10:30\ny\n", env, "console", "-data", t.TempDir(), "-policies", "../../policies.yaml")
	if r.code != 0 {
		t.Fatalf("console: exit %d\n%s\n%s", r.code, r.stdout, r.stderr)
	}
	for _, want := range []string{"I'll send it to the team chat.", "Approve send_message to 222?", "→ sent to 222 (message 1):\nStandup moves to 10:30\n"} {
		if !strings.Contains(r.stdout, want) {
			t.Errorf("console output lacks %q:\n%s", want, r.stdout)
		}
	}
	if n := strings.Count(r.stdout, "→ sent"); n != 1 || len(srv.Requests()) != 1 {
		t.Errorf("sends = %d, model requests = %d; want 1 and 1", n, len(srv.Requests()))
	}
	if !strings.Contains(r.stderr, "transition=end:awaiting_approval") {
		t.Errorf("the log does not record how the turn ended:\n%s", r.stderr)
	}
}

// TestASecretNeverReachesTheModel types plain text holding an API key: it is refused
// before any request, so the key never leaves the process.
func TestASecretNeverReachesTheModel(t *testing.T) {
	srv := agenttest.NewServer(t, agenttest.Message("end_turn", "ok"))
	env := map[string]string{"ANTHROPIC_API_KEY": "sk-ant-test-0000000000000000000000", "ANTHROPIC_BASE_URL": srv.URL}
	leaked := "sk-ant-api03-" + strings.Repeat("x7Q", 31) + "AA"
	r := runMain(t, "please store this key: "+leaked+"\n", env, "console", "-data", t.TempDir(), "-policies", "../../policies.yaml")
	if r.code != 0 || !strings.Contains(r.stdout, "not sent to the model") {
		t.Fatalf("console: exit %d\n%s\n%s", r.code, r.stdout, r.stderr)
	}
	if n := len(srv.Requests()); n != 0 {
		t.Errorf("model requests = %d, want none", n)
	}
	if strings.Contains(r.stdout+r.stderr, leaked) {
		t.Error("the key was echoed")
	}
}

// The fallback model comes from the environment when it is set, else from the
// policy, and start-up says which is in force; model.enabled: false keeps plain
// text away from a configured model.
func TestStartUpSaysWhichFallbackIsInForce(t *testing.T) {
	srv := agenttest.NewServer(t, agenttest.Message("end_turn", "Hello."))
	pol, _ := os.ReadFile("../../policies.yaml")
	write := func(lines string) string {
		path := filepath.Join(t.TempDir(), "policies.yaml")
		head, section, _ := strings.Cut(string(pol), "\nmodel:\n") // edit the model section only
		for _, l := range strings.Split(lines, "\n") {
			if k, _, _ := strings.Cut(strings.TrimSpace(l), ":"); k != "" {
				section = regexp.MustCompile(`(?m)^  `+k+`:.*$`).ReplaceAllString(section, l)
			}
		}
		os.WriteFile(path, []byte(head+"\nmodel:\n"+section), 0o600)
		return path
	}
	key := "sk-ant-test-0000000000000000000000"
	tests := []struct {
		name, policy, envFallback string
		want                      []string
	}{
		{"policy only", "  fallback: claude-haiku-4-5", "",
			[]string{"fallback=claude-haiku-4-5 fallback_from=policy", "attempts=10"}},
		{"environment wins", "  fallback: claude-haiku-4-5\n  attempts: 4", "claude-small",
			[]string{"fallback=claude-small fallback_from=ANTHROPIC_FALLBACK_MODEL", "attempts=4"}},
		{"none", "", "", []string{"fallback=none fallback_from=none"}},
		{"turned off", "  enabled: false", "", []string{"model.enabled is false"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			env := map[string]string{"ANTHROPIC_API_KEY": key, "ANTHROPIC_BASE_URL": srv.URL, "ANTHROPIC_FALLBACK_MODEL": tt.envFallback}
			r := runMain(t, "", env, "console", "-data", t.TempDir(), "-policies", write(tt.policy))
			if r.code != 0 {
				t.Fatalf("console: exit %d\n%s\n%s", r.code, r.stdout, r.stderr)
			}
			for _, want := range tt.want {
				if !strings.Contains(r.stderr, want) {
					t.Errorf("start-up log lacks %q:\n%s", want, r.stderr)
				}
			}
		})
	}
}
