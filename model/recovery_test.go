package model_test

import (
	"context"
	"encoding/json"
	"errors"
	"testing"
	"time"

	"github.com/countersign/countersign/model"
	"github.com/countersign/countersign/model/modeltest"
)

// The in-process stand-ins of package modeltest, under the names the tests use.
type (
	script   = modeltest.Script
	answer   = modeltest.Answer
	recorder = modeltest.Recorder
)

var (
	fail     = modeltest.Fail
	noJitter = modeltest.NoJitter
)

var (
	ok          = answer{Res: model.Response{Text: "done", Stop: model.StopEndTurn}}
	cut         = answer{Res: model.Response{Text: "do", Stop: model.StopMaxTokens}}
	refused     = answer{Err: &model.ConnectionError{Provider: "openai", Detail: "connection refused"}}
	noRetry529  = answer{Err: &model.APIError{Provider: "anthropic", Status: 529, Type: "overloaded_error", ShouldRetry: new(false)}}
	tooLong     = answer{Err: &model.APIError{Provider: "anthropic", Status: 400, Type: "invalid_request_error", Message: "prompt is too long: 219898 tokens > 200000 maximum"}}
	overloaded  = fail(529, "overloaded_error", 0)
	streamError = fail(200, "overloaded_error", 0)
)

func TestRecoveryPaths(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name     string
		policy   model.Policy
		answers  []answer
		bg       bool
		jitter   func(int64) int64
		want     string
		attempts int
		wantErr  bool
	}{
		{"retry-after honoured", model.Policy{}, []answer{fail(429, "rate_limit_error", 2*time.Second), ok}, false, nil,
			"retry(429, wait 2s) -> ok", 2, false},
		{"exponential backoff without retry-after", model.Policy{}, []answer{fail(500, "api_error", 0), fail(502, "", 0), fail(504, "timeout_error", 0), ok}, false, nil,
			"retry(500, wait 1s) -> retry(502, wait 2s) -> retry(504, wait 4s) -> ok", 4, false},
		{"jitter takes up to a quarter", model.Policy{BaseDelay: time.Second}, []answer{refused, ok}, false, func(n int64) int64 { return n - 1 },
			"retry(connection, wait 750ms) -> ok", 2, false},
		{"backoff capped", model.Policy{MaxAttempts: 6, BaseDelay: time.Second, MaxDelay: 3 * time.Second},
			[]answer{refused, refused, refused, ok}, false, nil,
			"retry(connection, wait 1s) -> retry(connection, wait 2s) -> retry(connection, wait 3s) -> ok", 4, false},
		{"request budget", model.Policy{MaxAttempts: 3}, []answer{fail(500, "api_error", 0)}, false, nil,
			"retry(500, wait 1s) -> retry(500, wait 2s) -> stop(500: request budget spent)", 3, true},
		{"retry-after beyond the wait budget", model.Policy{MaxWait: 30 * time.Second}, []answer{fail(429, "rate_limit_error", time.Hour)}, false, nil,
			"stop(429: the service asked to wait 1h0m0s, more than the 30s left of the wait budget)", 1, true},
		{"wait budget spent by backoff", model.Policy{MaxWait: 2500 * time.Millisecond}, []answer{fail(503, "", 0)}, false, nil,
			"retry(503, wait 1s) -> stop(503: wait budget spent)", 2, true},
		{"x-should-retry false", model.Policy{}, []answer{noRetry529}, false, nil,
			"stop(529: the service said not to retry)", 1, true},
		{"two overloads switch to the fallback", model.Policy{FallbackModel: "small", OverloadsInARow: 2}, []answer{overloaded, streamError, ok}, false, nil,
			"retry(529, wait 1s) -> retry(overloaded_error, wait 2s) -> fallback(small) -> ok", 3, false},
		{"overloads not in a row keep the model", model.Policy{FallbackModel: "small", OverloadsInARow: 2}, []answer{overloaded, fail(500, "", 0), overloaded, ok}, false, nil,
			"retry(529, wait 1s) -> retry(500, wait 2s) -> retry(529, wait 4s) -> ok", 4, false},
		{"max_tokens raises the limit once, to the raised limit", model.Policy{}, []answer{cut, cut}, false, nil,
			"raise_max_tokens(65536) -> ok(max_tokens)", 2, false},
		{"max_tokens raised limit from the policy", model.Policy{MaxTokensCap: 150}, []answer{cut, ok}, false, nil,
			"raise_max_tokens(150) -> ok", 2, false},
		{"401 stops at once", model.Policy{}, []answer{fail(401, "authentication_error", 0)}, false, nil,
			"stop(401: status not retryable)", 1, true},
		{"413 stops at once", model.Policy{}, []answer{fail(413, "request_too_large", 0)}, false, nil,
			"stop(413: status not retryable)", 1, true},
		{"quota stops at once", model.Policy{}, []answer{{Err: &model.APIError{Status: 429, Type: "insufficient_quota", Code: "insufficient_quota"}}}, false, nil,
			"stop(429: quota or spend limit reached)", 1, true},
		{"prompt too long stops", model.Policy{}, []answer{tooLong}, false, nil,
			"stop(400: prompt too long)", 1, true},
		{"background gives up on 529", model.Policy{}, []answer{overloaded, ok}, true, nil,
			"stop(529: background request gives up on overload)", 1, true},
		{"background gives up on 503", model.Policy{}, []answer{fail(503, "", 0), ok}, true, nil,
			"stop(503: background request gives up on overload)", 1, true},
		{"background still retries 429", model.Policy{}, []answer{fail(429, "rate_limit_error", time.Second), ok}, true, nil,
			"retry(429, wait 1s) -> ok", 2, false},
		// Errors inside a stream (status 200) are retried like their HTTP twins.
		{"rate_limit_error inside a stream", model.Policy{}, []answer{fail(200, "rate_limit_error", 0), ok}, false, nil,
			"retry(rate_limit_error, wait 1s) -> ok", 2, false},
		{"timeout_error inside a stream", model.Policy{}, []answer{fail(200, "timeout_error", 0), ok}, false, nil,
			"retry(timeout_error, wait 1s) -> ok", 2, false},
		{"api_error inside a stream", model.Policy{}, []answer{fail(200, "api_error", 0), ok}, false, nil,
			"retry(api_error, wait 1s) -> ok", 2, false},
		{"invalid_request_error inside a stream stops", model.Policy{}, []answer{fail(200, "invalid_request_error", 0)}, false, nil,
			"stop(invalid_request_error: status not retryable)", 1, true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			p := &script{Answers: tt.answers}
			var rec recorder
			jitter := tt.jitter
			if jitter == nil {
				jitter = noJitter
			}
			req := model.Request{Model: "big", MaxTokens: 100, Background: tt.bg}
			_, err := rec.Recovery(p, tt.policy, jitter).Complete(context.Background(), req)
			if got := model.Trace(rec.Steps); got != tt.want {
				t.Errorf("path:\n got %s\nwant %s", got, tt.want)
			}
			if got := len(p.Requests); got != tt.attempts {
				t.Errorf("requests: got %d, want %d", got, tt.attempts)
			}
			if (err != nil) != tt.wantErr {
				t.Errorf("err: got %v, want error %v", err, tt.wantErr)
			}
			var total time.Duration
			for _, s := range rec.Steps {
				total += s.Wait
			}
			var slept time.Duration
			for _, w := range rec.Waits {
				slept += w
			}
			if slept != total {
				t.Errorf("slept %s, want the %s the steps name", slept, total)
			}
		})
	}
}

func TestRecoveryGiveUpError(t *testing.T) {
	t.Parallel()
	p := &script{Answers: []answer{fail(429, "rate_limit_error", time.Hour)}}
	var rec recorder
	_, err := rec.Recovery(p, model.Policy{MaxWait: time.Minute}, noJitter).Complete(context.Background(), model.Request{})
	var gu *model.GiveUpError
	if !errors.As(err, &gu) {
		t.Fatalf("got %v, want a *GiveUpError", err)
	}
	if gu.Attempts != 1 || gu.RetryAfter != time.Hour {
		t.Errorf("got attempts %d, retry after %s; want 1, 1h", gu.Attempts, gu.RetryAfter)
	}
	var ae *model.APIError
	if !errors.As(err, &ae) || ae.Status != 429 {
		t.Errorf("got %v, want the 429 *APIError wrapped", err)
	}
	_, err = model.NewRecovery(&script{Answers: []answer{tooLong}}, model.Policy{}).Complete(context.Background(), model.Request{})
	if !errors.Is(err, model.ErrPromptTooLong) {
		t.Errorf("got %v, want ErrPromptTooLong", err)
	}
}

func TestRecoveryRaisesTheLimitInTheNextRequest(t *testing.T) {
	t.Parallel()
	p := &script{Answers: []answer{cut, ok}}
	var rec recorder
	res, err := rec.Recovery(p, model.Policy{MaxTokensCap: 4096}, noJitter).Complete(context.Background(), model.Request{MaxTokens: 512})
	if err != nil || res.Stop != model.StopEndTurn {
		t.Fatalf("got %+v, %v; want the end_turn reply", res, err)
	}
	if got, want := p.Requests[1].MaxTokens, 4096; got != want {
		t.Errorf("second max_tokens: got %d, want %d", got, want)
	}
}

func TestRecoveryCancelledWhileWaiting(t *testing.T) {
	t.Parallel()
	ctx, cancel := context.WithCancel(context.Background())
	p := &script{Answers: []answer{fail(500, "api_error", 0)}}
	r := model.NewRecovery(p, model.Policy{}, model.WithSleep(func(ctx context.Context, _ time.Duration) error {
		cancel()
		return ctx.Err()
	}))
	_, err := r.Complete(ctx, model.Request{})
	if !errors.Is(err, context.Canceled) {
		t.Errorf("got %v, want context.Canceled", err)
	}
	var ae *model.APIError
	if !errors.As(err, &ae) || ae.Status != 500 {
		t.Errorf("got %v, want the last cause kept", err)
	}
}

// The default wait selects on ctx and a timer: a cancelled ctx ends it at once.
func TestRecoveryDefaultSleepHonoursContext(t *testing.T) {
	t.Parallel()
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	p := &script{Answers: []answer{fail(429, "rate_limit_error", 30*time.Second)}}
	done := make(chan error, 1)
	go func() {
		_, err := model.NewRecovery(p, model.Policy{}).Complete(ctx, model.Request{})
		done <- err
	}()
	select {
	case err := <-done:
		if !errors.Is(err, context.Canceled) {
			t.Errorf("got %v, want context.Canceled", err)
		}
	case <-time.After(5 * time.Second):
		t.Fatal("Complete did not return after ctx ended")
	}
}

// Over the real provider: two 529s from the recorded fixture switch the next
// request's body to the fallback model.
func TestRecoveryFallbackModelOnTheWire(t *testing.T) {
	t.Parallel()
	s := serve(t, fixture(t, "anthropic/http_529_overloaded.txt", 0), fixture(t, "anthropic/error_529_overloaded.json", 529),
		fixture(t, "anthropic/message_end_turn.json", 200))
	var rec recorder
	r := rec.Recovery(newProvider("anthropic", s.URL), model.Policy{FallbackModel: "claude-haiku-4-5", OverloadsInARow: 2}, noJitter)
	if _, err := r.Complete(context.Background(), model.Request{Model: "claude-sonnet-4-5", MaxTokens: 64,
		Messages: []model.Message{{Role: model.RoleUser, Text: "hi"}}}); err != nil {
		t.Fatal(err)
	}
	if got, want := model.Trace(rec.Steps), "retry(529, wait 1s) -> retry(529, wait 2s) -> fallback(claude-haiku-4-5) -> ok"; got != want {
		t.Errorf("path:\n got %s\nwant %s", got, want)
	}
	var models []string
	for _, r := range s.got() {
		var body struct{ Model string }
		json.Unmarshal(r.body, &body)
		models = append(models, body.Model)
	}
	if want := []string{"claude-sonnet-4-5", "claude-sonnet-4-5", "claude-haiku-4-5"}; len(models) != 3 || models[2] != want[2] || models[1] != want[1] {
		t.Errorf("models: got %v, want %v", models, want)
	}
}

// Over the real provider: the recorded 429 asks for 16s, which is waited.
func TestRecoveryRetryAfterOnTheWire(t *testing.T) {
	t.Parallel()
	limited := fixture(t, "anthropic/http_429_rate_limit_headers.txt", 0).with(fixture(t, "anthropic/error_429_rate_limit_short.json", 0))
	s := serve(t, limited, fixture(t, "anthropic/message_end_turn.json", 200))
	var rec recorder
	r := rec.Recovery(newProvider("anthropic", s.URL), model.Policy{}, noJitter)
	if _, err := r.Complete(context.Background(), model.Request{Model: "m", MaxTokens: 64,
		Messages: []model.Message{{Role: model.RoleUser, Text: "hi"}}}); err != nil {
		t.Fatal(err)
	}
	if got, want := model.Trace(rec.Steps), "retry(429, wait 16s) -> ok"; got != want {
		t.Errorf("path: got %s, want %s", got, want)
	}
	if got := len(s.got()); got != 2 {
		t.Errorf("requests: got %d, want 2", got)
	}
}

// The default schedule rides out ten seconds of overloads without a fallback
// model: four attempts half a second apart gave up after three and a half.
func TestDefaultPolicyRidesOutATenSecondBurst(t *testing.T) {
	t.Parallel()
	p := &script{Answers: []answer{overloaded, overloaded, overloaded, overloaded, ok}}
	var rec recorder
	if _, err := rec.Recovery(p, model.DefaultPolicy(), noJitter).Complete(context.Background(), model.Request{Model: "big"}); err != nil {
		t.Fatalf("gave up: %v (path %s)", err, model.Trace(rec.Steps))
	}
	var waited time.Duration
	for _, s := range rec.Steps {
		waited += s.Wait
	}
	if waited < 10*time.Second {
		t.Errorf("waited %s in all, want the burst's 10 s ridden out", waited)
	}
}

// Over the real provider: the recorded 429 with its retry-after set to 0 asks
// for a retry now, which is made at once, not after a backoff.
func TestRecoveryRetryAfterZeroMeansNow(t *testing.T) {
	t.Parallel()
	limited := fixture(t, "anthropic/http_429_rate_limit_headers.txt", 0).with(fixture(t, "anthropic/error_429_rate_limit_short.json", 0))
	limited.header = limited.header.Clone()
	limited.header.Set("Retry-After", "0")
	s := serve(t, limited, fixture(t, "anthropic/message_end_turn.json", 200))
	var rec recorder
	r := rec.Recovery(newProvider("anthropic", s.URL), model.Policy{}, noJitter)
	if _, err := r.Complete(context.Background(), model.Request{Model: "m", MaxTokens: 64,
		Messages: []model.Message{{Role: model.RoleUser, Text: "hi"}}}); err != nil {
		t.Fatal(err)
	}
	if got, want := model.Trace(rec.Steps), "retry(429, wait 0s) -> ok"; got != want {
		t.Errorf("path: got %s, want %s", got, want)
	}
}

// A turn's request budget spent stops at once: the failure that spent the last
// request is not followed by a wait that no request can use.
func TestRecoveryStopsAtOnceWhenTheTurnBudgetIsSpent(t *testing.T) {
	t.Parallel()
	p := &script{Answers: []answer{fail(500, "api_error", 0)}}
	var rec recorder
	_, err := rec.Recovery(p, model.Policy{}, noJitter).Complete(context.Background(),
		model.Request{Budget: model.NewBudget(2, time.Hour)})
	if !errors.Is(err, model.ErrTurnBudget) {
		t.Errorf("got %v, want ErrTurnBudget", err)
	}
	if got, want := model.Trace(rec.Steps), "retry(500, wait 1s) -> stop(500: the turn's request budget is spent)"; got != want {
		t.Errorf("path:\n got %s\nwant %s", got, want)
	}
	if len(rec.Waits) != 1 || len(p.Requests) != 2 {
		t.Errorf("waits %v, %d requests; want one wait, 2 requests", rec.Waits, len(p.Requests))
	}
}
