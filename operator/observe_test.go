package operator_test

import (
	"context"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/countersign/countersign/internal/wiring"
	"github.com/countersign/countersign/journal"
	"github.com/countersign/countersign/operator"
)

// Options.Observe hears of every commit attempt as it ends, with the state it
// moved the operation to and the time from the move to committing: a repair, a
// delivery that took 2 s on the operator's clock, and an unknown outcome.
func TestObserveHearsEveryAttempt(t *testing.T) {
	t.Parallel()
	h := newHarness(t, migrated, nil, unknown)
	h.sender.delivered = func() { h.clock.Advance(2 * time.Second) }
	var mu sync.Mutex
	var got []operator.Attempt
	h.edit = func(o *wiring.Parts) {
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

// ApprovalsNearExpiry counts the approvals nobody decided within the last hour
// of a day's time to live, and not one that expired or was decided.
func TestApprovalsNearExpiry(t *testing.T) {
	t.Parallel()
	h := newHarness(t)
	ctx := context.Background()
	count := func(when string, want int) {
		t.Helper()
		got, err := h.op.ApprovalsNearExpiry(ctx)
		if err != nil {
			t.Fatal(err)
		}
		if got != want {
			t.Errorf("%s: ApprovalsNearExpiry = %d, want %d", when, got, want)
		}
	}
	ttl := h.pol.ApprovalTTL
	if ttl < 4*time.Hour {
		t.Fatalf("the policy's approval_ttl is %s; this test wants one of 4h or more (an hour's reminder window)", ttl)
	}
	h.send("123", "first")
	count("fresh", 0)
	h.clock.Advance(ttl - time.Hour - time.Minute)
	count("an hour and a minute before its expiry", 0)
	h.clock.Advance(2 * time.Minute)
	count("59 minutes before its expiry", 1)
	h.send("123", "second")
	_, third := h.send("123", "third")
	h.clock.Advance(ttl - time.Hour)
	count("after the first expired, the others an hour before theirs", 2)
	if _, err := h.op.Decide(ctx, h.approval(third), approverID, false); err != nil {
		t.Fatal(err)
	}
	count("after the third was rejected", 1)
}
