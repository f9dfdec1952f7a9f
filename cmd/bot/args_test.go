package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// Every command refuses an argument it does not take, and a subcommand it does
// not have, as a usage error: exit 2, a message naming the argument, and the
// command's usage line; it does nothing else (no data folder is made).
func TestEveryCommandRefusesAnUnexpectedArgument(t *testing.T) {
	data := filepath.Join(t.TempDir(), "data")
	in := []string{"-data", data}
	pol := []string{"-policies", "../../policies.yaml"}
	with := func(parts ...[]string) []string {
		var out []string
		for _, p := range parts {
			out = append(out, p...)
		}
		return out
	}
	tests := []struct {
		args []string
		say  string
	}{
		{with([]string{"run"}, in, pol, []string{"extra"}), `countersign run: unexpected argument "extra"`},
		{with([]string{"console"}, in, pol, []string{"extra"}), `countersign console: unexpected argument "extra"`},
		{with([]string{"mcp"}, in, pol, []string{"extra"}), `countersign mcp: unexpected argument "extra"`},
		{with([]string{"migrate"}, in, []string{"extra"}), `countersign migrate: unexpected argument "extra"`},
		{with([]string{"migrate", "-check"}, in, []string{"extra"}), `countersign migrate: unexpected argument "extra"`},
		{with([]string{"ops", "list"}, in, []string{"extra"}), `countersign ops list: unexpected argument "extra"`},
		{with([]string{"ops", "show"}, in, []string{"op-1", "extra"}), `countersign ops show: unexpected argument "extra"`},
		{with([]string{"ops", "show"}, in), `countersign ops show: missing <op_id>`},
		{with([]string{"ops", "show"}, in, []string{"op-1", "-json"}), `countersign ops show: unexpected argument "-json" (flags go before the arguments)`},
		{with([]string{"vault", "list"}, in, []string{"extra"}), `countersign vault list: unexpected argument "extra"`},
		{with([]string{"vault", "show"}, in, []string{"op-1", "extra"}), `countersign vault show: unexpected argument "extra"`},
		{with([]string{"vault", "resolve"}, in, pol, []string{"op-1", "delivered", "extra"}), `countersign vault resolve: unexpected argument "extra"`},
		{with([]string{"vault", "resolve"}, in, pol, []string{"op-1"}), `countersign vault resolve: missing delivered|not_delivered`},
		{with([]string{"vault", "resolve"}, in, pol, []string{"op-1", "maybe"}), `countersign vault resolve: "maybe" is neither delivered nor not_delivered`},
		{with([]string{"vault", "gc"}, in, []string{"extra"}), `countersign vault gc: unexpected argument "extra"`},
		{with([]string{"policies", "check"}, pol, []string{"extra"}), `countersign policies check: -policies and FILE`},
		{with([]string{"policies", "check"}, []string{"../../policies.yaml", "extra"}), `countersign policies check: unexpected argument "extra"`},
		{[]string{"ops", "frob"}, `countersign ops: unknown subcommand "frob"`},
		{[]string{"vault", "frob"}, `countersign vault: unknown subcommand "frob"`},
		{[]string{"policies", "frob"}, `countersign policies: unknown subcommand "frob"`},
		{[]string{"ops"}, `countersign ops: missing subcommand`},
		{[]string{"vault"}, `countersign vault: missing subcommand`},
		{[]string{"policies"}, `countersign policies: missing subcommand`},
		{[]string{"help", "extra"}, `countersign help: unexpected argument "extra"`},
	}
	for _, tt := range tests {
		t.Run(strings.ReplaceAll(strings.Join(tt.args, " "), data, "DIR"), func(t *testing.T) {
			r := runMain(t, "", map[string]string{"TELEGRAM_BOT_TOKEN": childToken, "TELEGRAM_API_URL": "http://127.0.0.1:1"}, tt.args...)
			if got, want := r.code, exitUsage; got != want {
				t.Errorf("exit %d, want %d\nstdout: %s\nstderr: %s", got, want, r.stdout, r.stderr)
			}
			if !strings.Contains(r.stderr, tt.say) {
				t.Errorf("stderr lacks %q:\n%s", tt.say, r.stderr)
			}
			if !strings.Contains(r.stderr, "usage: countersign ") {
				t.Errorf("stderr has no usage line:\n%s", r.stderr)
			}
			if _, err := os.Stat(data); err == nil {
				t.Errorf("the command made its data folder before refusing its arguments")
				os.RemoveAll(data)
			}
		})
	}
}

// countersign policies check FILE checks FILE, as -policies FILE does; neither falls
// back to ./policies.yaml.
func TestPoliciesCheckTakesTheFileAsAnArgument(t *testing.T) {
	bad := filepath.Join(t.TempDir(), "bad.yaml")
	os.WriteFile(bad, []byte("retry_budget: -1\n"), 0o600)
	tests := []struct {
		args []string
		code int
		out  string
	}{
		{[]string{"policies", "check", bad}, exitError, "retry_budget: must not be negative"},
		{[]string{"policies", "check", "-policies", bad}, exitError, "retry_budget: must not be negative"},
		{[]string{"policies", "check", "../../policies.yaml"}, exitOK, "ok"},
		{[]string{"policies", "check", filepath.Join(filepath.Dir(bad), "none.yaml")}, exitError, "policy file not found"},
	}
	for _, tt := range tests {
		r := runMain(t, "", nil, tt.args...)
		if got, want := r.code, tt.code; got != want {
			t.Errorf("bot %v: exit %d, want %d\n%s%s", tt.args, got, want, r.stdout, r.stderr)
		}
		if !strings.Contains(r.stdout, tt.out) {
			t.Errorf("bot %v: stdout %q lacks %q", tt.args, r.stdout, tt.out)
		}
	}
}

// Each subcommand takes exactly its own flags: one that belongs to a sibling,
// and that it would ignore, is refused with its usage.
func TestASubcommandRefusesAFlagItWouldIgnore(t *testing.T) {
	for _, args := range [][]string{
		{"ops", "show", "-n", "3", "op-x"},
		{"ops", "show", "-state", "committed", "op-x"},
		{"ops", "list", "-vault", "v"},
		{"vault", "show", "-unresolved", "op-x"},
		{"vault", "gc", "-target", "222"},
		{"vault", "list", "-by", "me"},
		{"vault", "list", "-policies", "p.yaml"},
		{"vault", "resolve", "-json", "op-x", "delivered"},
		{"audit", "keygen", "-data", "d"},
		{"audit", "verify", "-vault", "v"},
		{"audit", "export", "-pub", "k"},
		{"policies", "check", "-data", "d"},
		{"migrate", "-vault", "v"},
	} {
		r := runMain(t, "", nil, args...)
		if r.code != exitUsage || !strings.Contains(r.stderr, "flag provided but not defined") || !strings.Contains(r.stderr, "usage: countersign "+args[0]) {
			t.Errorf("countersign %s: exit %d, %q; want the flag refused with the usage", strings.Join(args, " "), r.code, r.stderr)
		}
	}
}
