package telegram_test

import (
	"context"
	"errors"
	"sync/atomic"
	"testing"
	"time"

	"github.com/countersign/countersign/action"
	"github.com/countersign/countersign/telegram/telegramtest"
	"github.com/countersign/countersign/tools"
)

// A send checks its fence last: after the rate limiter's wait, right before the
// write. A replica that lost the operation while it waited for the chat's next
// slot writes nothing, and says so with action.ErrFenced.
func TestASendChecksItsFenceAfterTheLimitersWait(t *testing.T) {
	t.Parallel()
	srv, tg := flooded(t) // one message per second per chat
	srv.Inject(telegramtest.Delay(300 * time.Millisecond).For("sendMessage").OnCall(1))
	ctx := context.Background()
	var firstAnswered atomic.Bool
	first := make(chan error, 1)
	go func() {
		_, err := tg.Sender().Send(ctx, tools.Message{Target: "300", Text: "first"})
		firstAnswered.Store(true)
		first <- err
	}()
	waitFor(t, "the first send reached Telegram", func() bool { return len(srv.CallsTo("sendMessage")) == 1 })

	var checkedAfterTheWait atomic.Bool
	checks := make(chan struct{}, 4)
	fence := func(context.Context) error {
		// The chat's next slot opens a second after the first send's answer.
		checkedAfterTheWait.Store(firstAnswered.Load())
		checks <- struct{}{}
		return action.ErrFenced
	}
	_, err := tg.Sender().Send(action.WithFence(ctx, fence), tools.Message{Target: "300", Text: "second"})
	if !errors.Is(err, action.ErrFenced) {
		t.Fatalf("fenced send = %v, want ErrFenced", err)
	}
	if err := <-first; err != nil {
		t.Fatal(err)
	}
	if len(checks) != 1 || !checkedAfterTheWait.Load() {
		t.Errorf("fence checked %d times, after the limiter's wait: %v; want once, after it", len(checks), checkedAfterTheWait.Load())
	}
	for _, c := range srv.CallsTo("sendMessage") {
		if c.Params["text"] == "second" {
			t.Fatal("the fenced message reached Telegram")
		}
	}
}

func waitFor(t *testing.T, what string, ok func() bool) {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for !ok() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out waiting until %s", what)
		}
		time.Sleep(5 * time.Millisecond)
	}
}
