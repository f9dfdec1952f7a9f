package main

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/countersign/countersign/telegram/telegramtest"
)

// countersign mcp, started by an agent with the agent's environment (no BOT_APPROVERS),
// finds the approvers where the bot finds them: in the policy, or in the record
// a countersign run on the same data folder left of the lists it uses. With none
// anywhere it refuses, saying where to put them.
func TestBotMCPFindsTheApproversWithoutTheShellsEnvironment(t *testing.T) {
	tests := []struct {
		name     string
		user     string // countersign init -user, "" for a policy without access lists
		runEnv   string // BOT_APPROVERS of a countersign run on the data folder first; "" for no run
		mcpEnv   map[string]string
		code     int
		say, not string
	}{
		{name: "approvers in the policy", user: "111", code: exitOK, not: "no approvers"},
		{name: "approvers only in the environment of countersign run", runEnv: "111", code: exitOK, not: "no approvers", say: "access lists of the countersign run on this data folder"},
		{name: "the environment of countersign mcp wins", runEnv: "111", mcpEnv: map[string]string{"BOT_APPROVERS": "222"}, code: exitOK, not: "no approvers"},
		{name: "an empty BOT_APPROVERS of countersign run", runEnv: " ", code: exitError, say: "no approvers"},
		{name: "none anywhere", code: exitError, say: "put your Telegram user id in access.approvers of "},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			root := t.TempDir()
			data, pol := filepath.Join(root, "data"), filepath.Join(root, "policies.yaml")
			initArgs := []string{"init", "-data", data, "-policies", pol}
			if tt.user != "" {
				initArgs = append(initArgs, "-user", tt.user)
			}
			runMain(t, "", nil, initArgs...) // no token: it writes the files and stops there
			if tt.runEnv != "" {
				runBotUntilPolling(t, data, pol, map[string]string{"BOT_OPERATORS": tt.runEnv, "BOT_APPROVERS": tt.runEnv})
			}
			r := runMain(t, "", tt.mcpEnv, "mcp", "-data", data, "-policies", pol) // stdin ends at once: the client went away
			if r.code != tt.code {
				t.Errorf("countersign mcp: exit %d, want %d\n%s", r.code, tt.code, r.stderr)
			}
			if tt.say != "" && !strings.Contains(r.stderr, tt.say) {
				t.Errorf("stderr lacks %q:\n%s", tt.say, r.stderr)
			}
			if tt.not != "" && strings.Contains(r.stderr, tt.not) {
				t.Errorf("stderr says %q:\n%s", tt.not, r.stderr)
			}
			if tt.code == exitError && !strings.Contains(r.stderr, "BOT_APPROVERS") {
				t.Errorf("the refusal does not name BOT_APPROVERS:\n%s", r.stderr)
			}
		})
	}
}

// runBotUntilPolling runs countersign run on data against a fake Bot API until it polls,
// then stops it.
func runBotUntilPolling(t *testing.T, data, pol string, env map[string]string) {
	t.Helper()
	srv := telegramtest.NewServer(t, telegramtest.Options{Token: childToken})
	env["TELEGRAM_BOT_TOKEN"], env["TELEGRAM_API_URL"] = childToken, srv.URL()
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	var log syncBuffer
	done := make(chan int, 1)
	go func() {
		done <- Main(ctx, []string{"run", "-data", data, "-policies", pol, "-poll-timeout", "1s"},
			Env{Stdin: strings.NewReader(""), Stdout: &log, Stderr: &log, Getenv: func(k string) string { return env[k] }})
	}()
	started := make(chan error, 1)
	go func() {
		started <- srv.WaitTimeout(childWait, func(s *telegramtest.Server) bool { return s.Polling() })
	}()
	select {
	case err := <-started:
		if err != nil {
			t.Fatalf("countersign run did not poll: %v\n%s", err, log.String())
		}
	case code := <-done:
		t.Fatalf("countersign run stopped with %d before polling:\n%s", code, log.String())
	}
	cancel()
	select {
	case <-done:
	case <-time.After(20 * time.Second):
		t.Fatalf("countersign run did not stop\n%s", log.String())
	}
	if _, err := os.Stat(filepath.Join(data, accessFile)); err != nil {
		t.Fatalf("countersign run left no record of its access lists: %v", err)
	}
}
