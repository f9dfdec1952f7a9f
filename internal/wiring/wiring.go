// Package wiring builds an operator the way countersign run does: the tools over
// a sender and a file store, the verifier over the journal's history, the
// operator with the vault, and the command handler every surface talks to. The
// binary and the test rig (internal/rigtest) both build through it, so a new
// dependency of the operator is wired in one place.
package wiring

import (
	"context"
	"fmt"
	"log/slog"
	"time"

	"github.com/countersign/countersign/action"
	"github.com/countersign/countersign/command"
	"github.com/countersign/countersign/journal"
	"github.com/countersign/countersign/operator"
	"github.com/countersign/countersign/policy"
	"github.com/countersign/countersign/tools"
	"github.com/countersign/countersign/vault"
	"github.com/countersign/countersign/verifier"
)

// Parts are what an assembly is built from. Journal and Policy are required.
type Parts struct {
	Journal *journal.Journal
	Policy  *policy.Policy
	// Sender delivers the commits; nil sends nothing (a command that only
	// reads and resolves).
	Sender tools.Sender
	// Files keeps the files payloads send; nil: the file tools refuse.
	Files tools.FileStore
	// Vault receives the unknown-outcome envelopes; nil: journaled only.
	Vault *vault.Vault
	// Getenv reads the environment a declared HTTP tool's secret headers come
	// from; nil: the process's.
	Getenv func(string) string
	Logger *slog.Logger // nil: slog.Default()
	// Transport, Remote and Observe are operator.Options' own.
	Transport string
	Remote    bool
	Observe   func(operator.Attempt)
	// Clock is the operator's and the verifier's clock; nil: the real one.
	Clock operator.Clock
	// Review adds to the verifier what the binary adds when a model is
	// configured (the model check); nil: the verifier as the policy makes it.
	Review func(*verifier.Checker) *verifier.Checker
	// Shows is operator.Options' own: whether the review page shows a payload
	// whole (review.Shows); nil: not asked.
	Shows func(action.Payload) error
	// SweepEvery and WatchEvery are operator.Options' own; tests shorten them.
	SweepEvery, WatchEvery time.Duration
	// Rand is operator.Options' own (the jitter of retry waits); tests fix it.
	Rand func() float64
}

// Assembly is an operator and what it was built with.
type Assembly struct {
	Tools    *tools.Registry
	Verifier *verifier.Checker
	Operator *operator.Operator
	Handler  *command.Handler
}

// New builds the assembly of p.
func New(p Parts) (*Assembly, error) {
	sender := p.Sender
	if sender == nil {
		sender = noSender{}
	}
	opts := []tools.Option{tools.WithEnv(p.Getenv)}
	if p.Files != nil {
		opts = append(opts, tools.WithFiles(p.Files))
	}
	reg, err := tools.NewRegistry(p.Policy, sender, opts...)
	if err != nil {
		return nil, err
	}
	now := time.Now
	if p.Clock != nil {
		now = p.Clock.Now
	}
	check := verifier.New(p.Policy.Verify, operator.History{Journal: p.Journal}, now)
	if p.Review != nil {
		check = p.Review(check)
	}
	op, err := operator.New(operator.Options{Journal: p.Journal, Tools: reg, Policy: p.Policy, Verifier: check, Vault: p.Vault, Shows: p.Shows,
		Logger: p.Logger, Transport: p.Transport, Remote: p.Remote, Observe: p.Observe, Clock: p.Clock,
		SweepEvery: p.SweepEvery, WatchEvery: p.WatchEvery, Rand: p.Rand})
	if err != nil {
		return nil, err
	}
	h := &command.Handler{Operator: op, Journal: p.Journal, Policy: p.Policy, Surface: p.Transport}
	return &Assembly{Tools: reg, Verifier: check, Operator: op, Handler: h}, nil
}

// noSender is the sender of an assembly that must never send.
type noSender struct{}

func (noSender) Send(context.Context, tools.Message) (tools.Delivery, error) {
	return tools.Delivery{}, fmt.Errorf("this command sends nothing: %w", tools.ErrNotSent)
}
