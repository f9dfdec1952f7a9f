package policy

import (
	"encoding/json"
	"fmt"

	"gopkg.in/yaml.v3"
)

// LoopGuard tells a loop from recovery: the calls of a task that repeat what
// already went wrong stop the task with "possible doom loop", so that a caller (a
// model above all) cannot spend its budgets asking for the same thing again. A call
// is known by its tool and its arguments as the tool reads them.
//
// In policies.yaml it is either a boolean (the defaults, on or off) or a mapping
// {enabled, failures, successes, ping_pong}; keys left out of the mapping take
// the defaults.
type LoopGuard struct {
	Enabled bool `json:"enabled"`
	// Failures is how many times one call may end without success in a task (its
	// arguments refused, sent back for repair, failed); issued again after that, it
	// stops. A call whose outcome is unknown, or a repair that repeats the call it
	// repairs, stops at once whatever Failures says.
	Failures int `json:"failures"`
	// Successes is how many times one call may go through in a task (a draft
	// made, a send asked for or sent, a send rejected): issued again after
	// that, it stops. A repeated call is a loop even when it succeeds.
	Successes int `json:"successes"`
	// PingPong stops two different calls alternating, every one of them without
	// success: the call that would complete PingPong rounds (A B A B for 2) stops.
	// 0 turns this check off.
	PingPong int `json:"ping_pong"`
}

// Defaults of the loop guard: the first repeat of a call, failed or not, stops,
// and so does the fourth call of A B A B.
const (
	DefaultLoopGuardFailures  = 1
	DefaultLoopGuardSuccesses = 1
	DefaultLoopGuardPingPong  = 2
)

// DefaultLoopGuard is the loop guard of a policy that leaves it out, or says true.
func DefaultLoopGuard() LoopGuard {
	return LoopGuard{Enabled: true, Failures: DefaultLoopGuardFailures, Successes: DefaultLoopGuardSuccesses, PingPong: DefaultLoopGuardPingPong}
}

// UnmarshalJSON reads a task's snapshot, including one stored when loop_guard was
// a boolean (true or false then means the defaults, on or off) and one stored
// before a count existed (it takes the default).
func (g *LoopGuard) UnmarshalJSON(b []byte) error {
	*g = DefaultLoopGuard()
	var on bool
	if json.Unmarshal(b, &on) == nil {
		g.Enabled = on
		return nil
	}
	type plain LoopGuard
	return json.Unmarshal(b, (*plain)(g))
}

func (d *decoder) loopGuard(n *yaml.Node, path string, g *LoopGuard) {
	if n.Kind == yaml.ScalarNode && n.Tag == "!!bool" {
		d.bool(n, path, &g.Enabled)
		return
	}
	if n.Kind != yaml.MappingNode {
		d.errorf(n, path, "want true, false or a mapping {enabled, failures, successes, ping_pong}, got %s", describe(n))
		return
	}
	d.mapping(n, path, map[string]func(*yaml.Node, string){
		"enabled":   func(n *yaml.Node, f string) { d.bool(n, f, &g.Enabled) },
		"failures":  func(n *yaml.Node, f string) { d.int(n, f, &g.Failures) },
		"successes": func(n *yaml.Node, f string) { d.int(n, f, &g.Successes) },
		"ping_pong": func(n *yaml.Node, f string) { d.int(n, f, &g.PingPong) },
	})
	// Checked here rather than in Validate, so the section stays in this file; a
	// LoopGuard built in code is read leniently by the operator instead.
	bad := func(field, format string, v int) {
		f := join(path, field)
		d.errs = append(d.errs, &FieldError{Line: d.lines[f], Field: f, Msg: fmt.Sprintf(format, v)})
	}
	if g.Failures < 1 {
		bad("failures", "must be at least 1, got %d", g.Failures)
	}
	if g.Successes < 1 {
		bad("successes", "must be at least 1, got %d", g.Successes)
	}
	if g.PingPong == 1 || g.PingPong < 0 {
		bad("ping_pong", "must be 0 (off) or at least 2, got %d", g.PingPong)
	}
}
