package policy_test

import (
	"errors"
	"strings"
	"testing"

	"github.com/countersign/countersign/policy"
)

const stepUpPolicy = `
tools:
  commit_send_message: {side_effect: committed, approval: required}
  commit_publish_post: {side_effect: committed, approval: required, step_up: totp}
quorum:
  - chats: ["@NewsDesk"]
    step_up: totp
  - chats: ["@Board"]
    approvals: 2
    step_up: totp
access:
  approvers: [1, 2]
`

// TestStepUpIsAskedByATool'sEntryOrAQuorumRule: a tool's step_up asks a code
// of its every commit, a quorum rule's of commits to its chats (compared as
// the chats they name), whatever the tool; a rule that sets step_up alone
// asks one approver; nothing set asks none.
func TestStepUpIsAskedByAToolsEntryOrAQuorumRule(t *testing.T) {
	p, err := policy.Parse(strings.NewReader(stepUpPolicy))
	if err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		tool, target string
		want         policy.Factor
		approvals    int
	}{
		{"commit_send_message", "222", policy.NoFactor, 1},
		{"commit_publish_post", "222", policy.FactorTOTP, 1},
		{"commit_send_message", "@newsdesk", policy.FactorTOTP, 1},
		{"commit_send_message", "@BOARD", policy.FactorTOTP, 2},
	}
	for _, tt := range tests {
		if got := p.StepUp(tt.tool, tt.target); got != tt.want {
			t.Errorf("StepUp(%s, %s) = %q, want %q", tt.tool, tt.target, got, tt.want)
		}
		if got := p.Approvals(tt.tool, tt.target); got != tt.approvals {
			t.Errorf("Approvals(%s, %s) = %d, want %d", tt.tool, tt.target, got, tt.approvals)
		}
	}
	if d, _ := policy.Parse(strings.NewReader(minimal)); d.StepUp("commit_send_message", "1") != policy.NoFactor {
		t.Error("a policy that says nothing asks a second factor")
	}
}

// TestAFactorCoversItselfAndWeakerOnes: a vote with a code satisfies a
// policy that asks a code or nothing, a vote without one only a policy that
// asks nothing; a passkey covers a code, never the other way round.
func TestAFactorCoversItselfAndWeakerOnes(t *testing.T) {
	tests := []struct {
		given, asked policy.Factor
		want         bool
	}{
		{policy.NoFactor, policy.NoFactor, true},
		{policy.NoFactor, policy.FactorTOTP, false},
		{policy.FactorTOTP, policy.NoFactor, true},
		{policy.FactorTOTP, policy.FactorTOTP, true},
		{policy.FactorTOTP, policy.FactorPasskey, false},
		{policy.FactorPasskey, policy.FactorTOTP, true},
		{policy.Factor("sms"), policy.FactorTOTP, false},
	}
	for _, tt := range tests {
		if got := tt.given.Covers(tt.asked); got != tt.want {
			t.Errorf("%q.Covers(%q) = %v, want %v", tt.given, tt.asked, got, tt.want)
		}
	}
	if got := policy.Strongest(policy.NoFactor, policy.FactorPasskey, policy.FactorTOTP); got != policy.FactorPasskey {
		t.Errorf("Strongest = %q, want passkey", got)
	}
}

func TestStepUpErrorsNameTheField(t *testing.T) {
	tests := []struct{ name, extra, want string }{
		{"unknown factor", "  commit_post: {side_effect: committed, approval: required, step_up: sms}\n",
			`tools.commit_post.step_up: want one of ["totp" "passkey"], got "sms"`},
		{"no tap to follow", "  commit_post: {side_effect: committed, approval: none, step_up: totp}\n",
			"tools.commit_post.step_up: only a commit_* tool with approval: required"},
		{"quorum unknown", "quorum:\n  - chats: [\"222\"]\n    step_up: TOTP\n",
			`quorum[0].step_up: want one of ["totp" "passkey"], got "TOTP"`},
		{"quorum zero approvals without step_up", "quorum:\n  - chats: [\"222\"]\n    approvals: 0\n",
			"quorum[0].approvals: must be from 1 to 10"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			src := minimal + tt.extra
			if strings.HasPrefix(tt.extra, "  ") {
				src = strings.Replace(minimal, "tools:\n", "tools:\n"+tt.extra, 1)
			}
			_, err := policy.Parse(strings.NewReader(src))
			var errs policy.Errors
			if !errors.As(err, &errs) {
				t.Fatalf("Parse error = %v, want policy errors", err)
			}
			if got := errs.Error(); !strings.Contains(got, tt.want) {
				t.Errorf("error = %q, want %q", got, tt.want)
			}
		})
	}
	p := &policy.Policy{Tools: map[string]policy.Tool{"commit_x": {SideEffect: policy.SideEffectCommitted, Approval: policy.ApprovalRequired, StepUp: policy.FactorPasskey}}}
	if !p.Asks(policy.FactorPasskey) || p.Asks(policy.FactorTOTP) {
		t.Errorf("Asks: passkey %v, totp %v; want true, false", p.Asks(policy.FactorPasskey), p.Asks(policy.FactorTOTP))
	}
	q, err := policy.Parse(strings.NewReader(minimal + "quorum:\n  - chats: [\"222\"]\n    step_up: passkey\n"))
	if err != nil || !q.Asks(policy.FactorPasskey) {
		t.Errorf("a quorum rule asking a passkey: %v, asks %v; want it taken", err, q != nil && q.Asks(policy.FactorPasskey))
	}
}
