package policy

import (
	"fmt"
	"slices"
)

// A second factor bound to the payload (step_up). Where the policy asks one,
// a tap on Approve is not enough: the approver also gives proof that only they
// hold, enrolled on the machine and never through chat, so that whoever holds
// their Telegram account alone approves nothing:
//
//	tools:
//	  commit_publish_post: {side_effect: committed, approval: required, step_up: totp}
//	quorum:                      # or of every voter on commits to some chats
//	  - chats: ["@my_channel"]
//	    step_up: totp            # approvals left out: one approver, with a code

// Factor is a second factor a policy may ask of an approver beside the tap.
// The zero Factor asks none.
type Factor string

// The factors a policy may name.
const (
	NoFactor Factor = ""
	// FactorTOTP is a time-based one-time code (RFC 6238) from an
	// authenticator app, each code usable once.
	FactorTOTP Factor = "totp"
	// FactorPasskey is a WebAuthn assertion whose challenge commits to the
	// approval and the payload's hash.
	FactorPasskey Factor = "passkey"
)

// Factors are the factors a policy may name, weakest first.
var Factors = []Factor{FactorTOTP, FactorPasskey}

// availableFactors are the factors this version can check: a policy naming
// another is refused at load, never run without the check it asks for.
var availableFactors = map[Factor]bool{FactorTOTP: true, FactorPasskey: true}

// Name names f as people read it: "TOTP", "passkey".
func (f Factor) Name() string {
	switch f {
	case FactorTOTP:
		return "TOTP"
	case FactorPasskey:
		return "passkey"
	}
	return string(f)
}

// Available reports whether this version can check f.
func (f Factor) Available() bool { return availableFactors[f] }

// strength orders the factors: none, then Factors in order.
func (f Factor) strength() int { return slices.Index(Factors, f) + 1 }

// Covers reports whether a vote given with f satisfies a policy that asks
// asked: the same factor or a stronger one. Every factor covers none.
func (f Factor) Covers(asked Factor) bool { return f.strength() >= asked.strength() }

// Strongest is the strongest of fs (NoFactor for none).
func Strongest(fs ...Factor) Factor {
	best := NoFactor
	for _, f := range fs {
		if f.strength() > best.strength() {
			best = f
		}
	}
	return best
}

// StepUp is the second factor a commit of tool to target asks of each
// approver: the strongest its tool's entry or any quorum rule covering it
// asks, NoFactor when none does.
func (p *Policy) StepUp(tool, target string) Factor {
	f := p.Tools[tool].StepUp
	for _, q := range p.Quorum {
		if (q.Tool == "" || q.Tool == tool) && slices.ContainsFunc(q.Chats, func(c string) bool { return sameTarget(c, target) }) {
			f = Strongest(f, q.StepUp)
		}
	}
	return f
}

// Asks reports whether any tool or quorum rule of p asks f: a policy that
// asks a passkey needs the review page, where passkeys are used.
func (p *Policy) Asks(f Factor) bool {
	for _, t := range p.Tools {
		if t.StepUp == f {
			return true
		}
	}
	return slices.ContainsFunc(p.Quorum, func(q Quorum) bool { return q.StepUp == f })
}

// validateStepUp reports a factor this version cannot check, and one asked of
// a tool that asks no tap, through add.
func (p *Policy) validateStepUp(add func(field, format string, args ...any)) {
	available := func(field string, f Factor) {
		if f != NoFactor && !f.Available() {
			add(field, "%q is not available in this version", f)
		}
	}
	for _, name := range p.ToolNames() {
		t := p.Tools[name]
		if t.StepUp == NoFactor {
			continue
		}
		available("tools."+name+".step_up", t.StepUp)
		if t.SideEffect != SideEffectCommitted || t.Approval != ApprovalRequired {
			add("tools."+name+".step_up", "only a commit_* tool with approval: required has a tap for a second factor to follow")
		}
	}
	for i, q := range p.Quorum {
		available(fmt.Sprintf("quorum[%d].step_up", i), q.StepUp)
	}
}
