package agent

import (
	"context"
	"fmt"
	"math/rand/v2"
	"time"
)

// Policy bounds what Recovery may do for one Complete. A zero field takes the value
// of DefaultPolicy, except FallbackModel: "" never switches models.
type Policy struct {
	// MaxAttempts is the request budget: requests per Complete, the first included.
	MaxAttempts int
	// MaxWait is the wait budget: the most time spent waiting between requests.
	MaxWait time.Duration
	// BaseDelay and MaxDelay shape the exponential backoff used when the service
	// names no wait: BaseDelay·2^n, capped at MaxDelay, less up to a quarter of jitter.
	BaseDelay, MaxDelay time.Duration
	// FallbackModel is used from the request after OverloadsInARow overloads.
	FallbackModel   string
	OverloadsInARow int
	// MaxTokensCap bounds the raised output limit after a max_tokens stop.
	MaxTokensCap int
}

// DefaultPolicy is the policy for zero fields: 4 requests, 60s of waiting, backoff
// from 500ms to 8s, fallback after 2 overloads in a row, output limit raised up to
// 16384 tokens.
func DefaultPolicy() Policy {
	return Policy{MaxAttempts: 4, MaxWait: time.Minute, BaseDelay: 500 * time.Millisecond,
		MaxDelay: 8 * time.Second, OverloadsInARow: 2, MaxTokensCap: 16384}
}

func (p Policy) withDefaults() Policy {
	d := DefaultPolicy()
	pick := func(v *int, def int) {
		if *v <= 0 {
			*v = def
		}
	}
	pickD := func(v *time.Duration, def time.Duration) {
		if *v <= 0 {
			*v = def
		}
	}
	pick(&p.MaxAttempts, d.MaxAttempts)
	pick(&p.OverloadsInARow, d.OverloadsInARow)
	pick(&p.MaxTokensCap, d.MaxTokensCap)
	pickD(&p.MaxWait, d.MaxWait)
	pickD(&p.BaseDelay, d.BaseDelay)
	pickD(&p.MaxDelay, d.MaxDelay)
	return p
}

// Recovery is a Provider that wraps another with retries, a fallback model and a
// raised output limit, within the budgets of its Policy. It wraps the model request
// only: tools never run inside it. It is safe for concurrent use when its provider
// and observer are.
type Recovery struct {
	provider Provider
	policy   Policy
	sleep    func(context.Context, time.Duration) error
	jitter   func(n int64) int64
	observe  func(Step)
}

var _ Provider = (*Recovery)(nil)

// RecoveryOption configures a Recovery.
type RecoveryOption func(*Recovery)

// WithSleep replaces the wait between requests; it must return ctx's error when ctx
// ends first. The default selects on ctx and a timer.
func WithSleep(sleep func(context.Context, time.Duration) error) RecoveryOption {
	return func(r *Recovery) { r.sleep = sleep }
}

// WithJitter replaces the source of jitter: jitter(n) returns a value in [0, n).
func WithJitter(jitter func(n int64) int64) RecoveryOption {
	return func(r *Recovery) { r.jitter = jitter }
}

// WithObserver has observe called with every Step, in order, as it happens.
func WithObserver(observe func(Step)) RecoveryOption {
	return func(r *Recovery) { r.observe = observe }
}

// NewRecovery wraps p with the recovery of policy.
func NewRecovery(p Provider, policy Policy, opts ...RecoveryOption) *Recovery {
	r := &Recovery{provider: p, policy: policy.withDefaults(), sleep: sleep, jitter: rand.Int64N, observe: func(Step) {}}
	for _, opt := range opts {
		opt(r)
	}
	return r
}

func sleep(ctx context.Context, d time.Duration) error {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-ctx.Done():
		return ctx.Err()
	case <-t.C:
		return nil
	}
}

// run is the state of one Complete.
type run struct {
	req       Request
	attempt   int
	overloads int // in a row
	raised    bool
	left      time.Duration // of the wait budget
}

// Complete makes requests until one succeeds or recovery gives up, which it reports
// as a *GiveUpError wrapping the last cause (an *APIError, a *ConnectionError, the
// context's error); errors.Is(err, ErrPromptTooLong) holds for a prompt too long.
// A reply cut at max_tokens is asked again once with a higher output limit, then
// returned as it is.
func (r *Recovery) Complete(ctx context.Context, req Request) (Response, error) {
	s := &run{req: req, left: r.policy.MaxWait}
	for {
		s.attempt++
		res, err := r.provider.Complete(ctx, s.req)
		if err == nil {
			if r.done(s, res) {
				return res, nil
			}
			continue
		}
		wait, gerr := r.recover(ctx, s, err)
		if gerr != nil {
			return Response{}, gerr
		}
		if serr := r.sleep(ctx, wait); serr != nil {
			gerr := r.stop(s, "wait", "cancelled while waiting", err)
			gerr.ctxErr = serr
			return Response{}, gerr
		}
	}
}

// done reports whether res is the answer. A max_tokens stop raises the output limit
// once and asks again; the continuation prompt that would pick up a still-cut reply
// belongs to the agent loop, which sees the whole conversation, not here.
func (r *Recovery) done(s *run, res Response) bool {
	if res.Stop == StopMaxTokens && !s.raised && !s.req.Continues && s.attempt < r.policy.MaxAttempts {
		if limit := min(s.req.MaxTokens*2, r.policy.MaxTokensCap); limit > s.req.MaxTokens {
			s.raised, s.req.MaxTokens = true, limit
			r.record(s, Step{Action: ActionRaise, Cause: string(StopMaxTokens), Detail: fmt.Sprint(limit)})
			return false
		}
	}
	st := Step{Action: ActionOK}
	if res.Stop == StopMaxTokens {
		st.Detail = string(StopMaxTokens)
	}
	r.record(s, st)
	return true
}

// recover decides what follows a failed request: how long to wait before the next,
// or the *GiveUpError that ends Complete.
func (r *Recovery) recover(ctx context.Context, s *run, err error) (time.Duration, *GiveUpError) {
	f := classify(err)
	if ctx.Err() != nil {
		gerr := r.stop(s, f.cause, "cancelled", err)
		gerr.ctxErr = ctx.Err()
		return 0, gerr
	}
	if reason := r.refusal(s, f); reason != "" {
		return 0, r.stop(s, f.cause, reason, err)
	}
	wait, reason := r.delay(s, f)
	if reason != "" {
		gerr := r.stop(s, f.cause, reason, err)
		if f.api != nil {
			gerr.RetryAfter = f.api.RetryAfter
		}
		return 0, gerr
	}
	s.left -= wait
	r.record(s, Step{Action: ActionRetry, Cause: f.cause, Wait: wait})
	r.fallback(s, f)
	return wait, nil
}

// refusal is why a failure must not be retried, "" when it may be.
func (r *Recovery) refusal(s *run, f failure) string {
	switch {
	case !f.retryable:
		return f.reason
	case f.api != nil && f.api.ShouldRetry != nil && !*f.api.ShouldRetry:
		return "the service said not to retry"
	case f.overload && s.req.Background:
		return "background request gives up on overload"
	case s.attempt >= r.policy.MaxAttempts:
		return "request budget spent"
	}
	return ""
}

// delay is the wait before the next request: the service's Retry-After, else
// backoff with jitter. A wait beyond the wait budget left gives a reason to stop.
func (r *Recovery) delay(s *run, f failure) (time.Duration, string) {
	if f.api != nil && f.api.RetryAfter > 0 {
		if ra := f.api.RetryAfter; ra > s.left {
			return 0, fmt.Sprintf("the service asked to wait %s, more than the %s left of the wait budget", ra, s.left)
		}
		return f.api.RetryAfter, ""
	}
	d := r.policy.MaxDelay
	if shift := s.attempt - 1; shift < 30 {
		d = min(r.policy.BaseDelay<<shift, r.policy.MaxDelay)
	}
	d -= time.Duration(r.jitter(int64(d/4) + 1))
	if d > s.left {
		return 0, "wait budget spent"
	}
	return d, ""
}

// fallback switches to the fallback model after enough overloads in a row.
func (r *Recovery) fallback(s *run, f failure) {
	if !f.overload {
		s.overloads = 0
		return
	}
	s.overloads++
	fb := r.policy.FallbackModel
	if fb == "" || s.req.Model == fb || s.overloads < r.policy.OverloadsInARow {
		return
	}
	s.req.Model, s.overloads = fb, 0
	r.record(s, Step{Action: ActionFallback, Detail: fb})
}

func (r *Recovery) stop(s *run, cause, reason string, err error) *GiveUpError {
	r.record(s, Step{Action: ActionStop, Cause: cause, Detail: reason})
	return &GiveUpError{Attempts: s.attempt, Reason: reason, Err: err}
}

func (r *Recovery) record(s *run, st Step) {
	st.Attempt, st.Model = s.attempt, s.req.Model
	r.observe(st)
}
