package model

import (
	"context"
	"fmt"
	"math/rand/v2"
	"sync"
	"time"

	"github.com/countersign/countersign/policy"
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
	// MaxTokensCap is the one raised output limit after a max_tokens stop.
	MaxTokensCap int
	// Jitter is the share of each backoff wait taken off at random, in [0, 1).
	Jitter float64
	// StallWarning and StallAbort are the silences a Watch warns and aborts at.
	StallWarning, StallAbort time.Duration
}

// DefaultPolicy is the policy for zero fields: the model section of a policy that
// leaves it out (policy.DefaultModel): 10 requests, 3 minutes of waiting, backoff
// from 1s doubling to 30s less up to a quarter, fallback after 3 overloads in a row,
// the output limit raised once to 64k.
func DefaultPolicy() Policy { return RetryPolicy(policy.DefaultModel()) }

// RetryPolicy is the recovery a policy's model section asks for. The fallback
// model is the section's; the environment's, when set, is the caller's to apply.
func RetryPolicy(m policy.Model) Policy {
	return Policy{MaxAttempts: m.Attempts, MaxWait: m.TurnWait, BaseDelay: m.Backoff.Base, MaxDelay: m.Backoff.Cap,
		Jitter: m.Backoff.Jitter, FallbackModel: m.Fallback, OverloadsInARow: m.OverloadsBeforeFallback,
		MaxTokensCap: m.MaxTokensRaised, StallWarning: m.StallWarning, StallAbort: m.StallAbort}
}

// WithDefaults is p with every zero field (see Policy) taken from DefaultPolicy:
// the policy a coordinator acts on.
func (p Policy) WithDefaults() Policy {
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
	pickD(&p.StallWarning, d.StallWarning)
	pickD(&p.StallAbort, d.StallAbort)
	if p.Jitter <= 0 || p.Jitter >= 1 {
		p.Jitter = d.Jitter
	}
	return p
}

// Budget is what one turn may still spend on model requests across all its calls
// to Complete, and the fallback model once one was chosen: a fallback serves the
// rest of the turn, not only the request that met the overloads. The agent loop
// makes one per turn and passes it in every Request. It is safe for concurrent use.
type Budget struct {
	mu       sync.Mutex
	requests int
	wait     time.Duration
	fallback string
}

// NewBudget returns a turn's budget of requests (retries included) and of time
// spent waiting between them.
func NewBudget(requests int, wait time.Duration) *Budget {
	return &Budget{requests: requests, wait: wait}
}

// Take spends one request; false when none is left.
func (b *Budget) Take() bool {
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.requests <= 0 {
		return false
	}
	b.requests--
	return true
}

// Left is the number of requests the turn may still make.
func (b *Budget) Left() int {
	b.mu.Lock()
	defer b.mu.Unlock()
	return max(b.requests, 0)
}

// WaitLeft is the time the turn may still wait.
func (b *Budget) WaitLeft() time.Duration {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.wait
}

// SpendWait takes d from the time the turn may still wait.
func (b *Budget) SpendWait(d time.Duration) {
	b.mu.Lock()
	defer b.mu.Unlock()
	b.wait -= d
}

// Fallback is the model the turn fell back to, "" while it has not.
func (b *Budget) Fallback() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.fallback
}

func (b *Budget) fallBack(model string) {
	b.mu.Lock()
	defer b.mu.Unlock()
	b.fallback = model
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
	r := &Recovery{provider: p, policy: policy.WithDefaults(), sleep: Sleep, jitter: rand.Int64N, observe: func(Step) {}}
	for _, opt := range opts {
		opt(r)
	}
	return r
}

// Sleep waits d, or until ctx ends, when it returns ctx's error: the wait
// between retries, Recovery's and the agent CLIs' coordinator's.
func Sleep(ctx context.Context, d time.Duration) error {
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
	policy    Policy // the request's own, else the Recovery's
	budget    *Budget
	attempt   int
	overloads int // in a row
	raised    bool
}

// Complete makes requests until one succeeds or recovery gives up, which it reports
// as a *GiveUpError wrapping the last cause (an *APIError, a *ConnectionError, the
// context's error); errors.Is(err, ErrPromptTooLong) holds for a prompt too long.
// A reply cut at max_tokens is asked again once with a higher output limit, then
// returned as it is; the reply's MaxTokens says the limit it was made under, for
// the caller to keep or drop (a raised limit does not outlive a shortened
// conversation).
func (r *Recovery) Complete(ctx context.Context, req Request) (Response, error) {
	s := &run{req: req, policy: r.policy, budget: req.Budget}
	if req.Retry != nil {
		s.policy = req.Retry.WithDefaults()
	}
	if s.budget == nil {
		s.budget = NewBudget(s.policy.MaxAttempts, s.policy.MaxWait)
	}
	if fb := s.budget.Fallback(); fb != "" {
		s.req.Model = fb // chosen earlier in the turn: it serves the rest of it
	}
	for {
		if !s.budget.Take() {
			return Response{}, r.stop(s, "budget", "the turn's request budget is spent", ErrTurnBudget)
		}
		s.attempt++
		res, err := r.provider.Complete(ctx, s.req)
		if err == nil {
			if r.done(s, res) {
				res.MaxTokens = s.req.MaxTokens
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
			gerr.also = serr
			return Response{}, gerr
		}
	}
}

// done reports whether res is the answer. A max_tokens stop raises the output limit
// once and asks again; the continuation prompt that would pick up a still-cut reply
// belongs to the agent loop, which sees the whole conversation, not here.
func (r *Recovery) done(s *run, res Response) bool {
	if res.Stop == StopMaxTokens && !s.raised && !s.req.Continues && s.attempt < s.policy.MaxAttempts {
		// Escalate once, straight to the cap (seed: 8k -> 64k); a continuation
		// prompt follows if even that is cut.
		if limit := s.policy.MaxTokensCap; limit > s.req.MaxTokens {
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
		gerr.also = ctx.Err()
		return 0, gerr
	}
	if reason := r.refusal(s, f); reason != "" {
		return 0, r.stop(s, f.cause, reason, err)
	}
	if s.budget.Left() == 0 {
		// No request is left to use a wait: stop now, not after it.
		gerr := r.stop(s, f.cause, "the turn's request budget is spent", err)
		gerr.also = ErrTurnBudget
		return 0, gerr
	}
	wait, reason := r.delay(s, f)
	if reason != "" {
		gerr := r.stop(s, f.cause, reason, err)
		if f.api != nil {
			gerr.RetryAfter = f.api.RetryAfter
		}
		return 0, gerr
	}
	s.budget.SpendWait(wait)
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
	case s.attempt >= s.policy.MaxAttempts:
		return "request budget spent"
	}
	return ""
}

// delay is the wait before the next request: the service's Retry-After, else
// backoff with jitter. A wait beyond the wait budget left gives a reason to stop.
func (r *Recovery) delay(s *run, f failure) (time.Duration, string) {
	left := s.budget.WaitLeft()
	if f.api != nil && f.api.RetryNow {
		return 0, ""
	}
	if f.api != nil && f.api.RetryAfter > 0 {
		if ra := f.api.RetryAfter; ra > left {
			return 0, fmt.Sprintf("the service asked to wait %s, more than the %s left of the wait budget", ra, left)
		}
		return f.api.RetryAfter, ""
	}
	d := s.policy.Backoff(s.attempt, r.jitter)
	if d > left {
		return 0, "wait budget spent"
	}
	return d, ""
}

// Backoff is the wait after failed attempt n (from 1) when the service named
// none: BaseDelay·2^(n-1), capped at MaxDelay, less up to Jitter of it drawn
// from jitter(k), which returns a value in [0, k). Recovery and the agent CLIs'
// coordinator both wait by it.
func (p Policy) Backoff(n int, jitter func(int64) int64) time.Duration {
	d := p.MaxDelay
	if shift := n - 1; shift >= 0 && shift < 30 {
		d = min(p.BaseDelay<<shift, p.MaxDelay)
	}
	return d - time.Duration(jitter(int64(float64(d)*p.Jitter)+1))
}

// Fallback is the model to switch to after overloads in a row while asking
// model, "" to stay: FallbackModel once OverloadsInARow have come, unless it is
// the model already.
func (p Policy) Fallback(overloads int, model string) string {
	if fb := p.FallbackModel; fb != "" && model != fb && overloads >= p.OverloadsInARow {
		return fb
	}
	return ""
}

// fallback switches to the fallback model after enough overloads in a row.
func (r *Recovery) fallback(s *run, f failure) {
	if !f.overload {
		s.overloads = 0
		return
	}
	s.overloads++
	fb := s.policy.Fallback(s.overloads, s.req.Model)
	if fb == "" {
		return
	}
	s.req.Model, s.overloads = fb, 0
	s.budget.fallBack(fb)
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
