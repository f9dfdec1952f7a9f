package operator

import (
	"testing"
	"time"

	"github.com/countersign/countersign/policy"
	"github.com/countersign/countersign/tools"
)

func TestBackoff(t *testing.T) {
	t.Parallel()
	b := policy.Backoff{Base: time.Second, Cap: 30 * time.Second, Jitter: 0.2}
	tests := []struct {
		name       string
		n          int
		retryAfter time.Duration
		rnd        float64
		want       time.Duration
	}{
		{"retry_after wins over backoff", 3, 41 * time.Second, 0.9, 41 * time.Second},
		{"retry_after beyond the cap is honoured", 0, 2 * time.Hour, 0, 2 * time.Hour},
		{"first retry no jitter", 0, 0, 0, time.Second},
		{"second retry doubles", 1, 0, 0, 2 * time.Second},
		{"full jitter takes 20%", 2, 0, 0.9999999999, 3200 * time.Millisecond},
		{"capped", 10, 0, 0, 30 * time.Second},
		{"huge exponent stays capped", 200, 0, 0, 30 * time.Second},
	}
	for _, tt := range tests {
		got := backoff(b, tt.n, tt.retryAfter, tt.rnd)
		if diff := got - tt.want; diff < -time.Millisecond || diff > time.Millisecond {
			t.Errorf("%s: backoff(n=%d, retry_after=%s, rnd=%g) = %s, want %s", tt.name, tt.n, tt.retryAfter, tt.rnd, got, tt.want)
		}
	}
}

func TestClassify(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name string
		err  error
		want class
	}{
		{"wrapped not sent", wrap(errNotSent()), classRetry},
		{"wrapped unknown", wrap(errUnknown()), classVerify},
		{"plain error", errPlain(), classVerify},
		// A refusal for good that also says nothing left is a stop: retrying
		// what cannot succeed only spends the budget.
		{"refused, nothing sent", &tools.RefusedError{Reason: "no such variable", Err: tools.ErrNotSent}, classStop},
		{"repair, nothing sent", &tools.RepairError{Reason: "bad body", Err: tools.ErrNotSent}, classRepair},
	}
	for _, tt := range tests {
		if got := classify(tt.err).class; got != tt.want {
			t.Errorf("%s: class = %d, want %d", tt.name, got, tt.want)
		}
	}
}
