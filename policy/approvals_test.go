package policy_test

import (
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/countersign/countersign/policy"
)

const quorumPolicy = `
tools:
  commit_send_message: {side_effect: committed, approval: required}
  commit_publish_post: {side_effect: committed, approval: required, approvals: 2}
quorum:
  - chats: ["@NewsDesk"]
    approvals: 3
access:
  approvers: [1, 2]
  escalation: [3]
escalate_after: 0.5
grant_max: 2h
`

// TestApprovalsCountsTheMostAnyRuleAsks: a tool's approvals and a quorum rule
// for a target (compared as the chat it names) each raise the count; nothing
// set is one.
func TestApprovalsCountsTheMostAnyRuleAsks(t *testing.T) {
	p, err := policy.Parse(strings.NewReader(quorumPolicy))
	if err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		tool, target string
		want         int
	}{
		{"commit_send_message", "222", 1},
		{"commit_publish_post", "222", 2},
		{"commit_send_message", "@newsdesk", 3},
		{"commit_publish_post", "@NEWSDESK", 3},
	}
	for _, tt := range tests {
		if got := p.Approvals(tt.tool, tt.target); got != tt.want {
			t.Errorf("Approvals(%s, %s) = %d, want %d", tt.tool, tt.target, got, tt.want)
		}
	}
	created := time.Date(2026, 12, 3, 9, 0, 0, 0, time.UTC)
	if at, ok := p.EscalatesAt(created, created.Add(4*time.Hour)); !ok || !at.Equal(created.Add(2*time.Hour)) {
		t.Errorf("EscalatesAt = %s, %v; want half of the time to live", at, ok)
	}
	if p.GrantMax != 2*time.Hour || !p.Access.IsEscalation(3) || p.Access.IsEscalation(1) {
		t.Errorf("grant_max %s, escalation %v", p.GrantMax, p.Access.Escalation)
	}
	if d, _ := policy.Parse(strings.NewReader(minimal)); d.Approvals("commit_send_message", "1") != 1 || d.GrantMax != 0 {
		t.Error("a policy that says nothing asks more than one approver, or allows grants")
	}
	if _, ok := (&policy.Policy{}).EscalatesAt(created, created.Add(time.Hour)); ok {
		t.Error("escalation without a list")
	}
}

func TestApprovalsErrorsNameTheField(t *testing.T) {
	tests := []struct{ name, extra, want string }{
		{"too many for the approvers", "access:\n  approvers: [1]\nquorum:\n  - chats: [\"222\"]\n    approvals: 2\n",
			"quorum[0].approvals: asks 2 approvers, but access lists 1"},
		{"zero", "quorum:\n  - chats: [\"222\"]\n    approvals: 0\n", "quorum[0].approvals: must be from 1 to 10"},
		{"no chats", "quorum:\n  - approvals: 2\n", "quorum[0].chats: must list at least one chat id"},
		{"escalation without a list", "escalate_after: 0.5\n", "access.escalation: escalate_after is set"},
		{"escalation past the expiry", "escalate_after: 1.5\naccess:\n  escalation: [3]\n", "escalate_after: want a share of approval_ttl in [0, 1)"},
		{"negative grant", "grant_max: -1h\n", "grant_max: must not be negative"},
		{"self-approval off with one approver", "self_approval: false\naccess:\n  operators: [1]\n  approvers: [1]\n",
			"self_approval: is false, and operator 1 is the only approver"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := policy.Parse(strings.NewReader(minimal + tt.extra))
			var errs policy.Errors
			if !errors.As(err, &errs) || len(errs) != 1 {
				t.Fatalf("Parse error = %v, want one policy error", err)
			}
			if got := errs[0].Error(); !strings.Contains(got, tt.want) {
				t.Errorf("error = %q, want %q", got, tt.want)
			}
		})
	}
}

// TestSelfApprovalIsAllowedUnlessTheFileSaysFalse: a file without the key, or
// a snapshot stored before it existed, lets a requester approve their own
// request; self_approval: false does not, and passes validation when another
// approver is listed.
func TestSelfApprovalIsAllowedUnlessTheFileSaysFalse(t *testing.T) {
	for _, tt := range []struct {
		extra string
		want  bool
	}{
		{"", true},
		{"self_approval: true\n", true},
		{"self_approval: false\naccess:\n  operators: [1]\n  approvers: [1, 2]\n", false},
	} {
		p, err := policy.Parse(strings.NewReader(minimal + tt.extra))
		if err != nil {
			t.Fatalf("%q: %v", tt.extra, err)
		}
		if got := p.SelfApprovalAllowed(); got != tt.want {
			t.Errorf("%q: SelfApprovalAllowed = %v, want %v", tt.extra, got, tt.want)
		}
	}
	if !(&policy.Policy{}).SelfApprovalAllowed() {
		t.Error("a snapshot without the key forbids self-approval; want it allowed, as before the key")
	}
}
