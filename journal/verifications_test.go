package journal_test

import (
	"context"
	"sync"
	"testing"
	"time"

	"github.com/countersign/countersign/journal"
)

// A request to verify an operation is recorded once per interval, whoever asks
// and through whichever handle (another process's journal on the same store): a
// repeat within the interval answers with the first request, records nothing,
// and gives the owner nothing more to show; once the interval is past, a request
// is recorded again.
func TestAVerificationIsAskedOncePerInterval(t *testing.T) {
	t.Parallel()
	forEachBackend(t, testAVerificationIsAskedOncePerInterval)
}

func testAVerificationIsAskedOncePerInterval(t *testing.T, name string) {
	ctx := context.Background()
	var mu sync.Mutex
	now := time.Date(2026, 12, 1, 9, 0, 0, 0, time.UTC)
	clock := func() time.Time { mu.Lock(); defer mu.Unlock(); return now }
	advance := func(d time.Duration) { mu.Lock(); defer mu.Unlock(); now = now.Add(d) }
	j := open(t, name, clock)
	other := open(t, name, clock) // countersign mcp's journal, beside the bot's
	_, op := newOp(t, j)
	const every = 10 * time.Minute

	first, err := other.AskVerification(ctx, op.ID, "mcp:agent-a", false, every)
	if err != nil || first.Repeat {
		t.Fatalf("first request = %+v, %v; want recorded", first, err)
	}
	for i, tt := range []struct {
		j     *journal.Journal
		by    string
		after time.Duration
	}{
		{other, "mcp:agent-a", time.Second},
		{j, "mcp:agent-b", time.Minute},
		{other, "mcp:agent-b", every - 2*time.Minute - time.Second},
	} {
		advance(tt.after)
		got, err := tt.j.AskVerification(ctx, op.ID, tt.by, false, every)
		if err != nil {
			t.Fatal(err)
		}
		if !got.Repeat || got.Seq != first.Seq || !got.Asked.Equal(first.Asked) || got.AskedBy != first.AskedBy {
			t.Errorf("repeat %d = %+v, want the first request %+v, marked a repeat", i, got, first)
		}
	}
	shown, err := j.VerificationsToShow(ctx, "telegram")
	if err != nil || len(shown) != 1 || shown[0].Seq != first.Seq {
		t.Errorf("to show = %+v, %v; want the first request alone", shown, err)
	}
	advance(2 * time.Minute) // past the interval
	again, err := j.AskVerification(ctx, op.ID, "mcp:agent-b", false, every)
	if err != nil || again.Repeat || again.Seq == first.Seq {
		t.Errorf("after the interval = %+v, %v; want a new request", again, err)
	}
}
