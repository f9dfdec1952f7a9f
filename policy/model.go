package policy

import (
	"encoding/json"
	"fmt"
	"slices"
	"time"

	"gopkg.in/yaml.v3"
)

// Model is how the model layer drives a language model and recovers from its
// failures: which model and which fallback, the output limit and its one raise,
// and the retry coordinator's schedule and budgets. It is part of the policy, so it
// is snapshotted with each task: a turn in flight keeps the rules it started with.
type Model struct {
	// Provider is the brain behind plain text: "" a language model through its
	// SDK (ANTHROPIC_* or OPENAI_*), or an agent CLI (ProviderClaudeCode,
	// ProviderCodex) run headless with Countersign's tools only.
	// COUNTERSIGN_AGENT wins when set.
	Provider string `json:"provider"`
	// Enabled lets an operator's plain text go to a model when one is configured
	// (ANTHROPIC_* or OPENAI_*). false: commands only, whatever the environment.
	Enabled bool `json:"enabled"`
	// Name is the model; "" takes ANTHROPIC_MODEL / OPENAI_MODEL or the provider's
	// default. The environment variable wins when both are set.
	Name string `json:"name"`
	// Fallback serves the rest of a turn once OverloadsBeforeFallback overloads
	// came in a row; "" never switches. ANTHROPIC_FALLBACK_MODEL /
	// OPENAI_FALLBACK_MODEL win when set.
	Fallback string `json:"fallback"`
	// MaxTokens is the output limit of each request; a reply cut at it is asked
	// again once with MaxTokensRaised, then continued with a continuation prompt.
	MaxTokens       int `json:"max_tokens"`
	MaxTokensRaised int `json:"max_tokens_raised"`
	// Continuations is how many continuation prompts a turn may send after replies
	// still cut at the raised limit.
	Continuations int `json:"continuations"`
	// Attempts is the request budget of one model call: requests, the first
	// included, before recovery gives up.
	Attempts int `json:"attempts"`
	// Backoff shapes the wait before a retry when the service named none.
	Backoff Backoff `json:"backoff"`
	// Steps is the most model replies one turn may act on (tool rounds and
	// continuations); TurnRequests the most requests it may make, retries
	// included; TurnWait the most time it may spend waiting between them.
	Steps        int           `json:"steps"`
	TurnRequests int           `json:"turn_requests"`
	TurnWait     time.Duration `json:"turn_wait"`
	// StallWarning and StallAbort watch a stream's silence: a warning after the
	// first, and after the second the stream is dropped and asked again plainly.
	StallWarning time.Duration `json:"stall_warning"`
	StallAbort   time.Duration `json:"stall_abort"`
	// OverloadsBeforeFallback is how many overloads in a row switch to Fallback.
	OverloadsBeforeFallback int `json:"overloads_before_fallback"`
	// RunTime bounds one message's run of an agent CLI (Provider): its
	// attempts, their waits and its tools' waits for a tap included; past it
	// the run is ended and the chat told. Steps bounds a run's model turns
	// where the CLI can count them (Claude Code's --max-turns).
	RunTime time.Duration `json:"run_time"`
}

// UnmarshalJSON reads a task's snapshot; a key stored before it existed
// (run_time) takes its default.
func (m *Model) UnmarshalJSON(b []byte) error {
	*m = DefaultModel()
	type plain Model
	return json.Unmarshal(b, (*plain)(m))
}

// The agent CLIs a policy's model.provider can name.
const (
	ProviderClaudeCode = "claude-code"
	ProviderCodex      = "codex"
)

// Providers are the values model.provider takes: "" (the SDKs) and the CLIs.
var Providers = []string{"", ProviderClaudeCode, ProviderCodex}

// CheckProvider returns an error naming the known providers when name is none
// of them.
func CheckProvider(name string) error {
	if !slices.Contains(Providers, name) {
		return fmt.Errorf("unknown provider %q: want %q or %q (or leave it out for the SDKs)", name, ProviderClaudeCode, ProviderCodex)
	}
	return nil
}

// DefaultModel is the model section of a policy that leaves it out: 10 attempts a
// call with backoff from 1s doubling to 30s (so a 10 s burst of overloads is
// ridden out without a fallback), an 8k output limit raised once to 64k, and a
// turn bounded at 8 steps, 40 requests and 3 minutes of waiting; an agent CLI's
// run bounded at 15 minutes.
func DefaultModel() Model {
	return Model{
		Enabled:                 true,
		MaxTokens:               8192,
		MaxTokensRaised:         65536,
		Continuations:           3,
		Attempts:                10,
		Backoff:                 Backoff{Base: time.Second, Cap: 30 * time.Second, Jitter: 0.25},
		Steps:                   8,
		TurnRequests:            40,
		TurnWait:                3 * time.Minute,
		StallWarning:            10 * time.Second,
		StallAbort:              45 * time.Second,
		OverloadsBeforeFallback: 3,
		RunTime:                 15 * time.Minute,
	}
}

func (d *decoder) model(n *yaml.Node, path string, m *Model) {
	d.mapping(n, path, map[string]func(*yaml.Node, string){
		"provider":                  func(n *yaml.Node, f string) { m.Provider = d.string(n, f) },
		"enabled":                   func(n *yaml.Node, f string) { d.bool(n, f, &m.Enabled) },
		"name":                      func(n *yaml.Node, f string) { m.Name = d.string(n, f) },
		"fallback":                  func(n *yaml.Node, f string) { m.Fallback = d.string(n, f) },
		"max_tokens":                func(n *yaml.Node, f string) { d.int(n, f, &m.MaxTokens) },
		"max_tokens_raised":         func(n *yaml.Node, f string) { d.int(n, f, &m.MaxTokensRaised) },
		"continuations":             func(n *yaml.Node, f string) { d.int(n, f, &m.Continuations) },
		"attempts":                  func(n *yaml.Node, f string) { d.int(n, f, &m.Attempts) },
		"backoff":                   func(n *yaml.Node, f string) { d.backoff(n, f, &m.Backoff) },
		"steps":                     func(n *yaml.Node, f string) { d.int(n, f, &m.Steps) },
		"turn_requests":             func(n *yaml.Node, f string) { d.int(n, f, &m.TurnRequests) },
		"turn_wait":                 func(n *yaml.Node, f string) { d.duration(n, f, &m.TurnWait) },
		"stall_warning":             func(n *yaml.Node, f string) { d.duration(n, f, &m.StallWarning) },
		"stall_abort":               func(n *yaml.Node, f string) { d.duration(n, f, &m.StallAbort) },
		"overloads_before_fallback": func(n *yaml.Node, f string) { d.int(n, f, &m.OverloadsBeforeFallback) },
		"run_time":                  func(n *yaml.Node, f string) { d.duration(n, f, &m.RunTime) },
	})
}

// validate reports the model section's problems through add.
func (m Model) validate(add func(field, format string, args ...any)) {
	for field, v := range map[string]int{"model.max_tokens": m.MaxTokens, "model.attempts": m.Attempts,
		"model.steps": m.Steps, "model.turn_requests": m.TurnRequests, "model.overloads_before_fallback": m.OverloadsBeforeFallback} {
		if v < 1 {
			add(field, "must be at least 1, got %d", v)
		}
	}
	if err := CheckProvider(m.Provider); err != nil {
		add("model.provider", "%v", err)
	}
	if m.Continuations < 0 {
		add("model.continuations", "must not be negative, got %d", m.Continuations)
	}
	if m.MaxTokensRaised < m.MaxTokens {
		add("model.max_tokens_raised", "must be at least model.max_tokens (%d), got %d", m.MaxTokens, m.MaxTokensRaised)
	}
	if m.RunTime <= 0 {
		add("model.run_time", "must be positive, got %s", m.RunTime)
	}
	if m.TurnWait < 0 {
		add("model.turn_wait", "must not be negative, got %s", m.TurnWait)
	}
	m.Backoff.validate("model.backoff", add)
	if m.StallWarning <= 0 {
		add("model.stall_warning", "must be positive, got %s", m.StallWarning)
	}
	if m.StallAbort <= m.StallWarning {
		add("model.stall_abort", "must be longer than model.stall_warning (%s), got %s", m.StallWarning, m.StallAbort)
	}
	if m.Fallback != "" && m.Fallback == m.Name {
		add("model.fallback", "is the model itself (%q): name another model, or leave it out", m.Fallback)
	}
}
