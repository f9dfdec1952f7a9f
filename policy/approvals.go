package policy

import (
	"fmt"
	"slices"
	"time"
)

// Approvals beyond one tap, each off unless the file says otherwise:
//
//	tools:
//	  commit_publish_post: {side_effect: committed, approval: required, approvals: 2}
//	quorum:                      # or for a target, whatever the tool
//	  - chats: ["@my_channel"]
//	    approvals: 2
//	escalate_after: 0.5          # share of approval_ttl after which the card also goes to
//	access:
//	  escalation: [333]          # these approvers
//	grant_max: 8h                # the longest window grant an approver may give; 0: none
//	self_approval: false         # nobody approves a request of their own (default true)

// MaxQuorum bounds a quorum: a card is a message per approver.
const MaxQuorum = 10

// Quorum is a rule that commits of Tool ("" for any) to one of Chats need
// Approvals different approvers, each giving the second factor StepUp beside
// the tap when it is set (a rule that sets StepUp alone asks one approver).
type Quorum struct {
	Tool      string   `json:"tool,omitempty"`
	Chats     []string `json:"chats"`
	Approvals int      `json:"approvals"`
	StepUp    Factor   `json:"step_up,omitempty"`
}

// Approvals is how many different approvers must approve a commit of tool to
// target: the most that its tool's entry or any quorum rule asks, at least one.
func (p *Policy) Approvals(tool, target string) int {
	n := max(1, p.Tools[tool].Approvals)
	for _, q := range p.Quorum {
		if (q.Tool == "" || q.Tool == tool) && slices.ContainsFunc(q.Chats, func(c string) bool { return sameTarget(c, target) }) {
			n = max(n, q.Approvals)
		}
	}
	return n
}

// EscalatesAt is when an approval created at created and expiring at expires
// goes to the escalation list too, and whether it does at all.
func (p *Policy) EscalatesAt(created, expires time.Time) (time.Time, bool) {
	if p.EscalateAfter <= 0 || len(p.Access.Escalation) == 0 {
		return time.Time{}, false
	}
	return created.Add(time.Duration(float64(expires.Sub(created)) * p.EscalateAfter)), true
}

// SelfApprovalAllowed reports whether a person may approve a request of their
// own: true unless the file says self_approval: false.
func (p *Policy) SelfApprovalAllowed() bool { return p.SelfApproval == nil || *p.SelfApproval }

// IsEscalation reports whether id is on the escalation list: an approver of
// an approval once it was escalated.
func (a Access) IsEscalation(id UserID) bool { return slices.Contains(a.Escalation, id) }

// validateApprovals reports the problems of the quorum, escalation and grant
// settings through add.
func (p *Policy) validateApprovals(add func(field, format string, args ...any)) {
	approvers := len(p.Access.Approvers) + len(p.Access.Escalation)
	check := func(field string, n int) {
		switch {
		case n < 1 || n > MaxQuorum:
			add(field, "must be from 1 to %d, got %d", MaxQuorum, n)
		case len(p.Access.Approvers) > 0 && n > approvers:
			add(field, "asks %d approvers, but access lists %d: no commit could ever be approved", n, approvers)
		}
	}
	for _, name := range p.ToolNames() {
		t := p.Tools[name]
		if t.Approvals == 0 {
			continue
		}
		check("tools."+name+".approvals", t.Approvals)
		if t.SideEffect != SideEffectCommitted || t.Approval != ApprovalRequired {
			add("tools."+name+".approvals", "only a commit_* tool with approval: required has approvals to count")
		}
	}
	for i, q := range p.Quorum {
		field := fmt.Sprintf("quorum[%d]", i)
		if q.Approvals != 0 || q.StepUp == NoFactor {
			check(field+".approvals", q.Approvals)
		}
		if _, ok := p.Tools[q.Tool]; q.Tool != "" && !ok {
			add(field+".tool", "missing tool: %q is not declared under tools", q.Tool)
		}
		if len(q.Chats) == 0 {
			add(field+".chats", "must list at least one chat id")
		}
		for j, c := range q.Chats {
			if _, err := NormalizeTarget(c); err != nil {
				add(fmt.Sprintf("%s.chats[%d]", field, j), "want a chat id or @username, got %q", c)
			}
		}
	}
	switch {
	case !(p.EscalateAfter >= 0 && p.EscalateAfter < 1):
		add("escalate_after", "want a share of approval_ttl in [0, 1), got %g", p.EscalateAfter)
	case p.EscalateAfter > 0 && len(p.Access.Escalation) == 0:
		add("access.escalation", "escalate_after is set: list the approvers the card goes to")
	}
	if p.GrantMax < 0 {
		add("grant_max", "must not be negative, got %s", p.GrantMax)
	}
	if !p.SelfApprovalAllowed() {
		for _, op := range p.Access.Operators {
			others := slices.DeleteFunc(slices.Concat(p.Access.Approvers, p.Access.Escalation), func(id UserID) bool { return id == op })
			if p.Access.IsApprover(op) && len(others) == 0 {
				add("self_approval", "is false, and operator %d is the only approver: no request of theirs could ever be approved; list another approver", op)
			}
		}
	}
}
