package model_test

import (
	"context"
	"errors"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/countersign/countersign/agent/agenttest"
	"github.com/countersign/countersign/model"
)

// wireCase is a fault scripted once and run through both providers, plain and
// watched. want is the path of steps; byRun overrides it for a run named
// "kind", "plain" or "watched", or "kind/mode".
type wireCase struct {
	name     string
	replies  []agenttest.Reply
	policy   model.Policy
	watched  bool             // only streamed: the trouble needs a stream
	silences [2]time.Duration // the Watch's warning and abort times, when not those run chooses
	want     string
	byRun    map[string]string
	requests int
	ok       bool
	check    func(t *testing.T, kind string, s *agenttest.Server, res model.Response, err error)
}

// lookup is the value of m for the run of kind in mode.
func lookup(m map[string]string, kind, mode string) (string, bool) {
	for _, k := range []string{kind + "/" + mode, mode, kind} {
		if v, ok := m[k]; ok {
			return v, true
		}
	}
	return "", false
}

func TestRecoveryOverBothProviders(t *testing.T) {
	t.Parallel()
	tests := []wireCase{
		{name: "429 retry-after is waited", replies: []agenttest.Reply{agenttest.RateLimited(2 * time.Second), finalAnswer},
			want: "retry(429, wait 2s) -> ok", requests: 2, ok: true},
		{name: "429 retry-after-ms comes first", replies: []agenttest.Reply{agenttest.RateLimitedMs(300 * time.Millisecond), finalAnswer},
			want: "retry(429, wait 300ms) -> ok", requests: 2, ok: true},
		{name: "429 naming no wait backs off", replies: []agenttest.Reply{agenttest.RateLimited(0), finalAnswer},
			want: "retry(429, wait 375ms) -> ok", requests: 2, ok: true},
		{name: "overloads switch to the fallback model", policy: model.Policy{FallbackModel: "small-model"},
			replies:  []agenttest.Reply{agenttest.Fail(agenttest.Overload), agenttest.Fail(agenttest.Overload), finalAnswer},
			want:     "retry(529, wait 375ms) -> retry(529, wait 750ms) -> fallback(small-model) -> ok",
			byRun:    map[string]string{"openai": "retry(503, wait 375ms) -> retry(503, wait 750ms) -> fallback(small-model) -> ok"},
			requests: 3, ok: true, check: checkFallback},
		{name: "500 backs off", replies: []agenttest.Reply{agenttest.Fail(agenttest.ServerError), agenttest.Fail(agenttest.ServerError), finalAnswer},
			want: "retry(500, wait 375ms) -> retry(500, wait 750ms) -> ok", requests: 3, ok: true},
		{name: "401 stops", replies: []agenttest.Reply{agenttest.Fail(agenttest.AuthError)},
			want: "stop(401: status not retryable)", requests: 1},
		{name: "prompt too long stops", replies: []agenttest.Reply{agenttest.Fail(agenttest.PromptTooLong)},
			want: "stop(400: prompt too long)", requests: 1, check: checkPromptTooLong},
		{name: "max_tokens raises the output limit", policy: model.Policy{MaxTokensCap: 128}, replies: []agenttest.Reply{agenttest.Message("max_tokens", "It is sun"), finalAnswer},
			want: "raise_max_tokens(128) -> ok", requests: 2, ok: true, check: checkRaised},
		{name: "dropped connection is retried", replies: []agenttest.Reply{toolAnswer.DropAfter(3), finalAnswer},
			want: "retry(connection, wait 375ms) -> ok", requests: 2, ok: true},
		{name: "stream cut short is retried", replies: []agenttest.Reply{toolAnswer.CutAfter(3), finalAnswer},
			want: "retry(connection, wait 375ms) -> ok", requests: 2, ok: true},
		{name: "stall is aborted and asked again without streaming", replies: []agenttest.Reply{finalAnswer.StallAfter(2, 0), finalAnswer},
			want:  "stall_warning -> stall_abort -> ok",
			byRun: map[string]string{"plain": "retry(connection, wait 375ms) -> ok"}, requests: 2, ok: true, check: checkStreamedThenPlain},
		// The silences leave a loaded machine's pause between two pings far
		// from a warning; the stall is twice the abort.
		{name: "stall with pings is waited out", watched: true, silences: [2]time.Duration{300 * time.Millisecond, 600 * time.Millisecond},
			replies: []agenttest.Reply{finalAnswer.StallAfter(2, 1200*time.Millisecond).WithPings(10 * time.Millisecond)},
			want:    "ok", requests: 1, ok: true},
		{name: "hang before the headers", replies: []agenttest.Reply{finalAnswer.HangFor(0), finalAnswer},
			want:  "stall_warning -> stall_abort -> ok",
			byRun: map[string]string{"plain": "retry(connection, wait 375ms) -> ok"}, requests: 2, ok: true, check: checkStreamedThenPlain},
		{name: "overload inside the stream", replies: []agenttest.Reply{toolAnswer.FailAfter(3, agenttest.Overload), finalAnswer},
			want: "retry(overloaded_error, wait 375ms) -> ok",
			byRun: map[string]string{"openai/watched": "retry(service_unavailable_error, wait 375ms) -> ok",
				"anthropic/plain": "retry(529, wait 375ms) -> ok", "openai/plain": "retry(503, wait 375ms) -> ok"},
			requests: 2, ok: true},
		{name: "api error inside the stream", replies: []agenttest.Reply{toolAnswer.FailAfter(3, agenttest.ServerError), finalAnswer},
			want:     "retry(api_error, wait 375ms) -> ok",
			byRun:    map[string]string{"openai/watched": "retry(server_error, wait 375ms) -> ok", "plain": "retry(500, wait 375ms) -> ok"},
			requests: 2, ok: true},
	}
	for _, tt := range tests {
		for _, kind := range kinds {
			for _, watched := range []bool{false, true} {
				if tt.watched && !watched {
					continue
				}
				mode := map[bool]string{false: "plain", true: "watched"}[watched]
				t.Run(tt.name+"/"+kind+"/"+mode, func(t *testing.T) {
					tt.run(t, kind, mode, watched)
				})
			}
		}
	}
}

func (tt wireCase) run(t *testing.T, kind, mode string, watched bool) {
	s := agenttest.NewServer(t, tt.replies...)
	var w wireRun
	want := tt.want
	if v, ok := lookup(tt.byRun, kind, mode); ok {
		want = v
	}
	// A case whose path stalls watches with short silences, so that it runs
	// quickly; any other with long ones, so that a loaded machine's pause
	// between two chunks is never taken for a stall the path does not have.
	silences := tt.silences
	switch {
	case !watched:
		silences = [2]time.Duration{}
	case silences[0] != 0:
	case strings.Contains(want, "stall"):
		silences = [2]time.Duration{20 * time.Millisecond, 150 * time.Millisecond}
	default:
		silences = [2]time.Duration{5 * time.Second, 10 * time.Second}
	}
	// These cases are about each provider's failures, not the default schedule:
	// a half-second base keeps the recorded paths short.
	pol := tt.policy
	if pol.BaseDelay == 0 {
		pol.BaseDelay = 500 * time.Millisecond
	}
	if pol.FallbackModel != "" && pol.OverloadsInARow == 0 {
		pol.OverloadsInARow = 2
	}
	res, err := w.complete(kind, s, silences, pol)
	got := w.trace()
	if got != want {
		t.Errorf("path:\n got %s\nwant %s", got, want)
	}
	if n := len(s.Requests()); n != tt.requests {
		t.Errorf("requests: got %d, want %d", n, tt.requests)
	}
	if slept, named := w.waits, w.retryWaits(); !reflect.DeepEqual(slept, named) {
		t.Errorf("slept %v, want the waits the steps name, %v", slept, named)
	}
	var gu *model.GiveUpError
	switch {
	case tt.ok && err != nil:
		t.Errorf("err = %v, want a reply", err)
	case !tt.ok && !errors.As(err, &gu):
		t.Errorf("err = %v, want a *GiveUpError", err)
	case tt.ok && !strings.Contains(res.Text, "sunny"):
		t.Errorf("reply = %+v, want the final finalAnswer", res)
	}
	if err != nil && strings.Contains(err.Error(), key) {
		t.Errorf("the key is in %q", err)
	}
	if tt.check != nil {
		tt.check(t, kind, s, res, err)
	}
}

// checkFallback: the third request, and the reply, name the fallback model.
func checkFallback(t *testing.T, _ string, s *agenttest.Server, res model.Response, _ error) {
	var models []string
	for _, r := range s.Requests() {
		models = append(models, r.Model)
	}
	if want := []string{"test-model", "test-model", "small-model"}; !reflect.DeepEqual(models, want) {
		t.Errorf("models asked: got %v, want %v", models, want)
	}
	if res.Model != "small-model" {
		t.Errorf("reply's model = %q, want the fallback's", res.Model)
	}
}

func checkPromptTooLong(t *testing.T, _ string, _ *agenttest.Server, _ model.Response, err error) {
	if !errors.Is(err, model.ErrPromptTooLong) {
		t.Errorf("err = %v, want ErrPromptTooLong", err)
	}
}

// checkRaised: the second request asks for twice the output limit.
func checkRaised(t *testing.T, _ string, s *agenttest.Server, _ model.Response, _ error) {
	var limits []int
	for _, r := range s.Requests() {
		limits = append(limits, r.MaxTokens)
	}
	if want := []int{64, 128}; !reflect.DeepEqual(limits, want) {
		t.Errorf("max_tokens asked: got %v, want %v", limits, want)
	}
}

// checkStreamedThenPlain: a watched request that stalled is asked again plain.
func checkStreamedThenPlain(t *testing.T, _ string, s *agenttest.Server, _ model.Response, _ error) {
	got := streamed(s)
	if got[0] && !reflect.DeepEqual(got, []bool{true, false}) {
		t.Errorf("requests streamed = %v, want a stream, then one plain request", got)
	}
}

// Without WithSleep, Recovery really waits what the service asked: the server sees
// the next request no sooner.
func TestRecoveryWaitsOnTheWire(t *testing.T) {
	t.Parallel()
	for _, kind := range kinds {
		t.Run(kind, func(t *testing.T) {
			s := agenttest.NewServer(t, agenttest.RateLimitedMs(150*time.Millisecond), finalAnswer)
			r := model.NewRecovery(wireProvider(kind, s), model.Policy{})
			if _, err := r.Complete(context.Background(), plainRequest); err != nil {
				t.Fatal(err)
			}
			if gaps := s.Gaps(); len(gaps) != 1 || gaps[0] < 150*time.Millisecond {
				t.Errorf("gaps between requests = %v, want one of at least 150ms", gaps)
			}
		})
	}
}

// With the default policy (1s base, a quarter of jitter), each backoff waits
// between three quarters and the whole of BaseDelay·2^n.
func TestRecoveryBackoffJitterStaysInBounds(t *testing.T) {
	t.Parallel()
	for _, kind := range kinds {
		t.Run(kind, func(t *testing.T) {
			fail := agenttest.Fail(agenttest.ServerError)
			s := agenttest.NewServer(t, fail, fail, fail, finalAnswer)
			var w wireRun
			r := model.NewRecovery(wireProvider(kind, s), model.Policy{}, model.WithObserver(w.observe), model.WithSleep(w.sleep))
			if _, err := r.Complete(context.Background(), plainRequest); err != nil {
				t.Fatal(err)
			}
			if len(w.waits) != 3 || len(s.Requests()) != 4 {
				t.Fatalf("waits %v over %d requests, want 3 over 4", w.waits, len(s.Requests()))
			}
			for n, got := range w.waits {
				full := time.Second << n
				if got < full*3/4 || got > full {
					t.Errorf("wait %d = %s, want within [%s, %s]", n+1, got, full*3/4, full)
				}
			}
		})
	}
}
