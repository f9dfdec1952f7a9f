package agent_test

import (
	"context"
	"sync"
	"time"

	"github.com/countersign/countersign/agent/agenttest"
	"github.com/countersign/countersign/model"
)

// script is a model provider that gives its answers in order (the last one
// again once they are spent) and keeps the requests it was asked.
type script struct {
	mu       sync.Mutex
	answers  []answer
	requests []model.Request
}

type answer struct {
	res model.Response
	err error
}

func (s *script) Complete(_ context.Context, req model.Request) (model.Response, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	a := s.answers[min(len(s.requests), len(s.answers)-1)]
	s.requests = append(s.requests, req)
	return a.res, a.err
}

func fail(status int, typ string, retryAfter time.Duration) answer {
	return answer{err: &model.APIError{Provider: "anthropic", Status: status, Type: typ, RetryAfter: retryAfter}}
}

// key is the API key the tests' providers send: distinct, so that a test can
// look for it where it must not be.
const key = "sk-ant-TESTKEY-d1st1nct1ve-0042"

// kinds are the two wire formats a loop test runs over.
var kinds = []string{agenttest.Anthropic, agenttest.OpenAI}

// toolAnswer is a model's answer that calls a tool.
var toolAnswer = agenttest.Message("tool_use", "Let me look.", agenttest.Call("get_weather", `{"city":"Oslo"}`))

// recorder keeps the steps and the waits of one Recovery.
type recorder struct {
	steps []model.Step
	waits []time.Duration
}

func (rec *recorder) recovery(p model.Provider, pol model.Policy, jitter func(int64) int64) *model.Recovery {
	return model.NewRecovery(p, pol,
		model.WithObserver(func(s model.Step) { rec.steps = append(rec.steps, s) }),
		model.WithSleep(func(ctx context.Context, d time.Duration) error {
			rec.waits = append(rec.waits, d)
			return ctx.Err()
		}),
		model.WithJitter(jitter))
}

func noJitter(int64) int64 { return 0 }
