package main

import (
	"os"
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

// A first mistake says what to do: a policy file that is not there names the
// init line that writes one, and a -data that is a file says so, for every
// command that takes the folder, rather than failing on whichever of its files
// is read first ("pairing: … not a directory").
func TestAWrongPlaceSaysWhatToDo(t *testing.T) {
	dir := t.TempDir()
	file := filepath.Join(dir, "afile")
	if err := os.WriteFile(file, nil, 0o600); err != nil {
		t.Fatal(err)
	}
	missing := filepath.Join(dir, "none.yaml")
	env := map[string]string{"TELEGRAM_BOT_TOKEN": childToken}
	tests := []struct {
		args []string
		say  string
	}{
		{[]string{"console", "-data", dir, "-policies", missing}, "countersign init -policies " + missing + " writes one"},
		{[]string{"run", "-data", dir, "-policies", missing}, "countersign init -policies " + missing + " writes one"},
		{[]string{"console", "-data", file, "-policies", "../../policies.yaml"}, "the data folder " + file + " is a file, not a folder"},
		{[]string{"mcp", "-data", file, "-policies", "../../policies.yaml"}, "the data folder " + file + " is a file, not a folder"},
	}
	for _, tt := range tests {
		r := runMain(t, "", env, tt.args...)
		if r.code == exitOK || !strings.Contains(r.stderr, tt.say) || strings.Contains(r.stderr, "not a directory") {
			t.Errorf("countersign %s: exit %d, %q; want it to say %q", strings.Join(tt.args, " "), r.code, r.stderr, tt.say)
		}
	}
}
