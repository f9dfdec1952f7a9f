// Package modeltest holds the in-process stand-ins the model layer's tests and
// the agent loop's share: a provider that answers from a script, and a
// recorder of a Recovery's steps and waits. (agent/agenttest is the scripted
// model server, over HTTP and the real wire formats.)
package modeltest

import (
	"context"
	"sync"
	"time"

	"github.com/countersign/countersign/model"
)

// Script is a provider that gives its Answers in order (the last one again
// once they are spent) and keeps the Requests it was asked.
type Script struct {
	mu       sync.Mutex
	Answers  []Answer
	Requests []model.Request
}

var _ model.Provider = (*Script)(nil)

// Answer is one reply of a Script: a response, or an error.
type Answer struct {
	Res model.Response
	Err error
}

// Complete implements model.Provider.
func (s *Script) Complete(_ context.Context, req model.Request) (model.Response, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	a := s.Answers[min(len(s.Requests), len(s.Answers)-1)]
	s.Requests = append(s.Requests, req)
	return a.Res, a.Err
}

// Fail is an answer that is an API error of Anthropic's, with status, error
// type and the wait it asks for.
func Fail(status int, typ string, retryAfter time.Duration) Answer {
	return Answer{Err: &model.APIError{Provider: "anthropic", Status: status, Type: typ, RetryAfter: retryAfter}}
}

// Recorder keeps the Steps and the Waits of one Recovery.
type Recorder struct {
	Steps []model.Step
	Waits []time.Duration
}

// Recovery is a Recovery of p under pol that reports to r and waits for
// nothing (its sleeps are recorded, and end at once).
func (r *Recorder) Recovery(p model.Provider, pol model.Policy, jitter func(int64) int64) *model.Recovery {
	return model.NewRecovery(p, pol,
		model.WithObserver(func(s model.Step) { r.Steps = append(r.Steps, s) }),
		model.WithSleep(func(ctx context.Context, d time.Duration) error {
			r.Waits = append(r.Waits, d)
			return ctx.Err()
		}),
		model.WithJitter(jitter))
}

// NoJitter is a jitter that adds nothing.
func NoJitter(int64) int64 { return 0 }
