package operator_test

import (
	"context"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/countersign/countersign/journal"
	"github.com/countersign/countersign/operator"
)

// Options.Observe hears of every commit attempt as it ends, with the state it
// moved the operation to and the time from the move to committing: a repair, a
// delivery that took 2 s on the operator's clock, and an unknown outcome.
func TestObserveHearsEveryAttempt(t *testing.T) {
	h := newHarness(t, migrated, nil, unknown)
	h.sender.delivered = func() { h.clock.Advance(2 * time.Second) }
	var mu sync.Mutex
	var got []operator.Attempt
	h.edit = func(o *operator.Options) {
		o.Observe = func(a operator.Attempt) {
			mu.Lock()
			defer mu.Unlock()
			got = append(got, a)
		}
	}
	h.open()
	ctx := context.Background()
	_, first := h.send("222", "hello")
	if _, err := h.op.Decide(ctx, h.approval(first), approverID, true); err != nil {
		t.Fatal(err)
	}
	_, second := h.send("333", "and you")
	if _, err := h.op.Decide(ctx, h.approval(second), approverID, true); err != nil {
		t.Fatal(err)
	}
	want := []operator.Attempt{
		{Operation: first, Outcome: journal.Approved},
		{Operation: first, Outcome: journal.Committed, Took: 2 * time.Second},
		{Operation: second, Outcome: journal.Unknown},
	}
	mu.Lock()
	defer mu.Unlock()
	if fmt.Sprint(got) != fmt.Sprint(want) {
		t.Errorf("observed %+v, want %+v", got, want)
	}
}
