package main

import (
	"path/filepath"
	"strings"
	"testing"
)

// Every error that stops countersign run is said once: a log line and the command's own
// line with the same words made each one appear twice, one under the other.
func TestBotRunSaysItsErrorOnce(t *testing.T) {
	tests := []struct {
		name   string
		env    map[string]string
		policy string
		say    string
		not    string // "" for nothing
	}{
		{"no policy file", map[string]string{"TELEGRAM_BOT_TOKEN": childToken}, filepath.Join(t.TempDir(), "none.yaml"), "policy file not found", ""},
		{"Telegram refuses connections", map[string]string{"TELEGRAM_BOT_TOKEN": childToken, "TELEGRAM_API_URL": closedAPI(t)}, "../../policies.yaml",
			"the Bot API cannot be reached at http://127.0.0.1:", "error do request"},
		{"a name that does not resolve", map[string]string{"TELEGRAM_BOT_TOKEN": childToken, "TELEGRAM_API_URL": "http://countersign.invalid"}, "../../policies.yaml",
			"the Bot API cannot be reached at http://countersign.invalid (", "error do request"},
		{"a bad access list", map[string]string{"TELEGRAM_BOT_TOKEN": childToken, "BOT_APPROVERS": "12,abc"}, "../../policies.yaml", "BOT_APPROVERS", ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			r := runMain(t, "", tt.env, "run", "-data", t.TempDir(), "-policies", tt.policy)
			if r.code != exitError {
				t.Fatalf("exit %d, want %d\n%s", r.code, exitError, r.stderr)
			}
			if n := strings.Count(r.stderr, tt.say); n != 1 {
				t.Errorf("stderr says %q %d times, want once:\n%s", tt.say, n, r.stderr)
			}
			if tt.not != "" && strings.Contains(r.stderr, tt.not) {
				t.Errorf("stderr says %q:\n%s", tt.not, r.stderr)
			}
			if strings.Contains(tt.say, "cannot be reached") && !strings.Contains(r.stderr, "check the network, or TELEGRAM_API_URL") {
				t.Errorf("stderr does not say what to check:\n%s", r.stderr)
			}
			if !strings.Contains(r.stderr, "countersign run: ") {
				t.Errorf("stderr does not name the command:\n%s", r.stderr)
			}
		})
	}
}
