package policy_test

import (
	"errors"
	"strings"
	"testing"

	"github.com/countersign/countersign/policy"
)

const minimal = `
tools:
  prepare_reply:
    side_effect: none
  commit_send_message:
    side_effect: committed
    approval: required
`

func TestLoadDefaultFile(t *testing.T) {
	p, err := policy.Load("../policies.yaml")
	if err != nil {
		t.Fatalf("Load(policies.yaml): %v", err)
	}
	if got, want := p.ToolNames(), []string{"commit_publish_post", "commit_send_message", "prepare_reply"}; strings.Join(got, ",") != strings.Join(want, ",") {
		t.Errorf("tools = %v, want %v", got, want)
	}
	if p.RetryBudget != 2 || p.RepairBudget != 1 || p.LoopGuard != policy.DefaultLoopGuard() {
		t.Errorf("budgets = retry %d repair %d loop %v, want 2 1 true", p.RetryBudget, p.RepairBudget, p.LoopGuard)
	}
}

func TestParseDefaultsAndExplicitZero(t *testing.T) {
	p, err := policy.Parse(strings.NewReader(minimal))
	if err != nil {
		t.Fatal(err)
	}
	if p.RetryBudget != policy.DefaultRetryBudget || p.ApprovalTTL != policy.DefaultApprovalTTL {
		t.Errorf("unset keys: retry %d ttl %s, want defaults", p.RetryBudget, p.ApprovalTTL)
	}
	p, err = policy.Parse(strings.NewReader(minimal + "retry_budget: 0\nwait_budget: 0s\nloop_guard: false\n"))
	if err != nil {
		t.Fatal(err)
	}
	if p.RetryBudget != 0 || p.WaitBudget != 0 || p.LoopGuard.Enabled {
		t.Errorf("explicit zero: retry %d wait %s loop %v, want 0 0s false", p.RetryBudget, p.WaitBudget, p.LoopGuard)
	}
}

func TestParseErrorsNameFieldAndLine(t *testing.T) {
	tests := []struct {
		name, extra string
		want        string // "line N: field: ..." prefix
	}{
		{"unknown key", "retry_budgte: 2\n", "line 8: retry_budgte: unknown key"},
		{"unknown nested key", "backoff:\n  bsae: 1s\n", "line 9: backoff.bsae: unknown key"},
		{"bad duration", "approval_ttl: 1 day\n", `line 8: approval_ttl: bad duration "1 day"`},
		{"wrong type", "retry_budget: two\n", `line 8: retry_budget: want a whole number, got "two"`},
		{"negative budget", "repair_budget: -1\n", "line 8: repair_budget: must not be negative"},
		{"missing tool", "auto_approve:\n  - tool: commit_publish_post\n    chats: [\"1\"]\n", `line 9: auto_approve[0].tool: missing tool: "commit_publish_post"`},
		{"bad side effect", "  commit_publish_post:\n    side_effect: maybe\n    approval: required\n", `line 9: tools.commit_publish_post.side_effect: want one of`},
		{"jitter out of range", "backoff:\n  jitter: 1.5\n", "line 9: backoff.jitter: must be in [0, 1)"},
		{"bad user id", "access:\n  operators: [alice]\n", `line 9: access.operators[0]: want a Telegram user id, got "alice"`},
		{"cap below base", "backoff:\n  base: 10s\n  cap: 1s\n", "line 10: backoff.cap: must be at least backoff.base"},
		{"empty key", "\"\": 1\n", `line 8: (file): want a key name, got ""`},
		{"list as a key", "backoff:\n  ? [base]\n  : 1s\n", "line 9: backoff: want a key name, got a list"},
		{"unknown provider", "model:\n  provider: claude\n", `line 9: model.provider: unknown provider "claude"`},
		{"a proxy that is no address", "files:\n  fetch_proxy: proxy.internal:3128\n", "line 9: files.fetch_proxy: a proxy is an http or https address"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			src := minimal
			if strings.HasPrefix(tt.extra, "  ") { // more tools
				src = strings.TrimSuffix(minimal, "\n") + "\n" + tt.extra
			} else {
				src = minimal + tt.extra
			}
			_, err := policy.Parse(strings.NewReader(src))
			var errs policy.Errors
			if !errors.As(err, &errs) {
				t.Fatalf("Parse error = %v, want policy.Errors", err)
			}
			if !strings.HasPrefix(errs[0].Error(), tt.want) {
				t.Errorf("error = %q, want prefix %q", errs[0].Error(), tt.want)
			}
		})
	}
}

func TestParseRejectsMissingTools(t *testing.T) {
	for _, src := range []string{"", "retry_budget: 1\n", "tools: {}\n"} {
		_, err := policy.Parse(strings.NewReader(src))
		if err == nil || !strings.Contains(err.Error(), "tools: missing") {
			t.Errorf("Parse(%q) = %v, want a missing tools error", src, err)
		}
	}
}

func TestParseRejectsMisnamedAndMismatchedTools(t *testing.T) {
	tests := map[string]string{
		"prepare with side effect": "tools:\n  prepare_x:\n    side_effect: committed\n",
		"commit without approval":  "tools:\n  commit_x:\n    side_effect: committed\n",
		"name without class":       "tools:\n  send:\n    side_effect: none\n",
		"no side effect":           "tools:\n  prepare_x:\n    approval: none\n",
		"prepare with a class":     "tools:\n  prepare_x:\n    side_effect: none\n    idempotency: additive\n",
		"unknown class":            "tools:\n  commit_x:\n    side_effect: committed\n    approval: required\n    idempotency: once\n",
	}
	for name, src := range tests {
		if _, err := policy.Parse(strings.NewReader(src)); err == nil {
			t.Errorf("%s: Parse accepted %q", name, src)
		}
	}
}

func TestNeedsApproval(t *testing.T) {
	p, err := policy.Parse(strings.NewReader(minimal + "auto_approve:\n  - tool: commit_send_message\n    chats: [\"42\", \"@news_desk\"]\n"))
	if err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		tool, target string
		want         bool
	}{
		{"commit_send_message", "42", false},
		{"commit_send_message", "@news_desk", false},
		{"commit_send_message", "43", true},
		{"prepare_reply", "42", false},
		{"commit_unknown", "42", true},
	}
	for _, tt := range tests {
		if got := p.NeedsApproval(tt.tool, tt.target); got != tt.want {
			t.Errorf("NeedsApproval(%s, %s) = %v, want %v", tt.tool, tt.target, got, tt.want)
		}
	}
}

func TestApplyEnv(t *testing.T) {
	p, _ := policy.Parse(strings.NewReader(minimal + "access:\n  operators: [1]\n  approvers: [2]\n"))
	env := map[string]string{"BOT_APPROVERS": "7, 8"}
	if err := p.ApplyEnv(func(k string) string { return env[k] }); err != nil {
		t.Fatal(err)
	}
	if !p.Access.IsOperator(1) || p.Access.IsApprover(2) || !p.Access.IsApprover(8) {
		t.Errorf("access = %+v, want operators from file and approvers from env", p.Access)
	}
	env["BOT_OPERATORS"] = "1,x"
	err := p.ApplyEnv(func(k string) string { return env[k] })
	if err == nil || !strings.Contains(err.Error(), "BOT_OPERATORS") {
		t.Errorf("ApplyEnv with a bad id = %v, want an error naming BOT_OPERATORS", err)
	}
}

func TestLoadMissingFile(t *testing.T) {
	_, err := policy.Load(t.TempDir() + "/nope.yaml")
	if !errors.Is(err, policy.ErrNoFile) {
		t.Errorf("Load(missing) = %v, want ErrNoFile", err)
	}
}
