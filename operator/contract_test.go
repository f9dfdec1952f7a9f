package operator_test

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/countersign/countersign/action"
)

// TestAScheduledRetryCarriesTheWaitTheServiceAskedFor: a 429 asking for 40 s puts
// retry_after_ms 40000 in the result, the one journaled for the wait (what `countersign ops
// show` prints) and the one returned when the wait is cut short.
func TestAScheduledRetryCarriesTheWaitTheServiceAskedFor(t *testing.T) {
	t.Parallel()
	h := newHarness(t, rateLimited(40*time.Second))
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	_, opID := h.send("222", "hello")
	h.clock.onSleep = cancel // the process stops during the wait
	r, err := h.op.Decide(ctx, h.approval(opID), approverID, true)
	if !errors.Is(err, context.Canceled) {
		t.Fatalf("Decide = %v, want it cut short in the wait", err)
	}
	want := action.Result{Status: action.StatusRetryable, OperationID: opID, SideEffect: action.SideEffectNone, NextAction: action.NextRetry, RetryAfterMS: 40000}
	if r.Status != want.Status || r.OperationID != want.OperationID || r.SideEffect != want.SideEffect || r.NextAction != want.NextAction || r.RetryAfterMS != want.RetryAfterMS {
		t.Errorf("returned = %+v, want %+v", r, want)
	}
	op, _ := h.j.Operation(context.Background(), opID)
	if op.State != RW || op.Result == nil || op.Result.RetryAfterMS != 40000 || op.Result.NextAction != action.NextRetry {
		t.Errorf("journaled: %s with %+v, want retry_wait with retry_after_ms 40000", op.State, op.Result)
	}
}
