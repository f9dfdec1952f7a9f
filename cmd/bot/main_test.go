package main

import (
	"bytes"
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

type result struct {
	code           int
	stdout, stderr string
}

func runMain(t *testing.T, stdin string, env map[string]string, args ...string) result {
	t.Helper()
	var out, errOut bytes.Buffer
	code := Main(context.Background(), args, Env{Stdin: strings.NewReader(stdin), Stdout: &out, Stderr: &errOut,
		Getenv: func(k string) string { return env[k] }})
	return result{code, out.String(), errOut.String()}
}

func TestPoliciesCheck(t *testing.T) {
	dir := t.TempDir()
	bad := filepath.Join(dir, "bad.yaml")
	os.WriteFile(bad, []byte("tools:\n  prepare_reply:\n    side_effect: none\nretry_budget: -1\napproval_ttl: soon\n"), 0o600)
	tests := []struct {
		name     string
		args     []string
		code     int
		contains []string
	}{
		{"default file", []string{"policies", "check", "-policies", "../../policies.yaml"}, 0, []string{"ok"}},
		{"broken file", []string{"policies", "check", "-policies", bad}, 1, []string{"line 4: retry_budget: must not be negative", `line 5: approval_ttl: bad duration "soon"`}},
		{"missing file", []string{"policies", "check", "-policies", filepath.Join(dir, "none.yaml")}, 1, []string{"policy file not found"}},
		{"no subcommand", []string{"policies"}, 2, nil},
	}
	for _, tt := range tests {
		r := runMain(t, "", nil, tt.args...)
		if r.code != tt.code {
			t.Errorf("%s: exit %d, want %d (%s%s)", tt.name, r.code, tt.code, r.stdout, r.stderr)
		}
		for _, c := range tt.contains {
			if !strings.Contains(r.stdout, c) {
				t.Errorf("%s: stdout lacks %q:\n%s", tt.name, c, r.stdout)
			}
		}
	}
}

func TestConsoleThenOps(t *testing.T) {
	data := t.TempDir()
	r := runMain(t, "/send 222 hello\ny\n", nil, "console", "-data", data, "-policies", "../../policies.yaml")
	if r.code != 0 || !strings.Contains(r.stdout, "→ sent to 222") {
		t.Fatalf("console: exit %d\n%s%s", r.code, r.stdout, r.stderr)
	}
	r = runMain(t, "", nil, "ops", "list", "-json", "-data", data)
	var op struct{ ID, State, Target string }
	if err := json.Unmarshal([]byte(r.stdout), &op); err != nil || op.State != "committed" || op.Target != "222" {
		t.Fatalf("ops list -json = %q (%v), want one committed op to 222", r.stdout, err)
	}
	r = runMain(t, "", nil, "ops", "show", "-data", data, op.ID)
	if r.code != 0 || !strings.Contains(r.stdout, "committing -> committed") {
		t.Errorf("ops show: exit %d\n%s", r.code, r.stdout)
	}
	if r = runMain(t, "", nil, "ops", "show", "-data", data, "op-nope"); r.code != 1 {
		t.Errorf("ops show of an unknown id: exit %d, want 1", r.code)
	}
}

func TestUsageErrors(t *testing.T) {
	for _, args := range [][]string{{}, {"fly"}, {"ops"}, {"ops", "show", "-data", t.TempDir()}, {"console", "-nope"},
		{"run", "-webhook-listen", ":8443"}, {"run", "-webhook-listen", ":8443", "-webhook-url", "https://h/x", "-webhook-cert", "c.pem"},
		{"run", "-webhook-cert", "c.pem", "-webhook-key", "k.pem"}} {
		if r := runMain(t, "", nil, args...); r.code != 2 {
			t.Errorf("bot %v: exit %d, want 2", args, r.code)
		}
	}
	if r := runMain(t, "", nil, "ops", "list", "-data", filepath.Join(t.TempDir(), "none")); r.code != 1 || !strings.Contains(r.stderr, "no journal") {
		t.Errorf("ops list without a journal: exit %d %q, want 1 and a clear message", r.code, r.stderr)
	}
}

func TestConsoleRefusesABadEnvironment(t *testing.T) {
	r := runMain(t, "", map[string]string{"BOT_APPROVERS": "12,abc"}, "console", "-data", t.TempDir(), "-policies", "../../policies.yaml")
	if r.code != 1 || !strings.Contains(r.stderr, "BOT_APPROVERS") {
		t.Errorf("exit %d %q, want 1 naming BOT_APPROVERS", r.code, r.stderr)
	}
}

func TestConsoleNeverStoresAToken(t *testing.T) {
	data := t.TempDir()
	const tok = "123456789:AAHdqTcvCH1vGWJxfSeofSAs0K5PALDsaw"
	r := runMain(t, "/send 222 here is the token "+tok+"\n/send 222 +1 415 555 0100\ny\n", nil, "console", "-data", data, "-policies", "../../policies.yaml")
	if r.code != 0 || !strings.Contains(r.stdout, "looks like a secret") {
		t.Fatalf("console: exit %d\n%s", r.code, r.stdout)
	}
	filepath.Walk(data, func(path string, info os.FileInfo, err error) error {
		if err != nil || info.IsDir() {
			return err
		}
		if b, _ := os.ReadFile(path); strings.Contains(string(b), tok) {
			t.Errorf("%s holds the token", path)
		}
		return nil
	})
}

// The program names itself as it was invoked: go install of ./cmd/bot makes a
// binary named bot, and its usage lines and errors say bot, not countersign.
func TestUsageAndErrorsNameTheProgramAsInvoked(t *testing.T) {
	tests := []struct {
		args []string
		want []string
	}{
		{nil, []string{"usage: bot <command>"}},
		{[]string{"nonsense"}, []string{`bot: unknown command "nonsense"`, "usage: bot <command>"}},
		{[]string{"audit"}, []string{"bot audit: missing subcommand", "usage: bot audit verify", "bot audit verify -pub KEY FILE"}},
		{[]string{"backup"}, []string{"bot backup: -to DIR is required"}},
		{[]string{"backup", "-to"}, []string{"usage: bot backup -to DIR"}},
		{[]string{"audit", "verify", "-pub", "K"}, []string{"bot audit verify: -pub KEY and FILE go together"}},
		{[]string{"version", "-h"}, []string{"usage: bot version"}},
		{[]string{"run", "-poll-timeout", "500ms"}, []string{"bot run: -poll-timeout must be at least 1s"}},
		{[]string{"run", "-log-level", "loud"}, []string{"bot run: -log-level must be debug, info, warn or error"}},
	}
	for _, sub := range []string{"init", "run", "pair", "console", "demo", "ops", "ops list", "ops show", "policies", "vault", "vault list",
		"mcp", "migrate", "audit", "audit verify", "audit export", "audit keygen", "backup"} {
		tests = append(tests, struct {
			args []string
			want []string
		}{append(strings.Fields(sub), "-h"), []string{"usage: bot " + sub}})
	}
	for _, tt := range tests {
		var out, errOut bytes.Buffer
		Main(context.Background(), tt.args, Env{Stdin: strings.NewReader(""), Stdout: &out, Stderr: &errOut,
			Getenv: func(string) string { return "" }, Name: "bot"})
		said := out.String() + errOut.String()
		for _, w := range tt.want {
			if !strings.Contains(said, w) {
				t.Errorf("bot %v said %q, want %q in it", tt.args, said, w)
			}
		}
		if strings.Contains(said, "countersign ") {
			t.Errorf("bot %v names countersign: %q", tt.args, said)
		}
	}
}
