package standin_test

import (
	"context"
	"errors"
	"slices"
	"testing"
	"time"

	"github.com/go-telegram/bot"

	"github.com/countersign/countersign/telegram/standin"
)

// sendBurst sends n messages to chat and returns the retry_after of each
// refusal (0 for an accepted message).
func sendBurst(t *testing.T, b *bot.Bot, chat int64, n int) []int {
	t.Helper()
	var out []int
	for range n {
		_, err := sendText(context.Background(), b, chat, "x")
		var tmr *bot.TooManyRequestsError
		switch {
		case err == nil:
			out = append(out, 0)
		case errors.As(err, &tmr):
			out = append(out, tmr.RetryAfter)
		default:
			t.Fatalf("send: %v", err)
		}
	}
	return out
}

func TestFloodLimitPerChatBurst(t *testing.T) {
	clock := newClock()
	srv := newServer(t, standin.Options{Now: clock.Now, Flood: &standin.FloodLimits{}})
	b, _ := newBot(t, srv, 3*time.Second)

	got := sendBurst(t, b, 222, 6)
	want := []int{0, 0, 0, 1, 1, 1}
	if !slices.Equal(got, want) {
		t.Errorf("retry_after per send = %v, want %v", got, want)
	}
	if got, want := srv.FloodRejections(), 3; got != want {
		t.Errorf("FloodRejections = %d, want %d", got, want)
	}
	if got, want := len(srv.Messages(222)), 3; got != want {
		t.Errorf("messages = %d, want %d", got, want)
	}
	if other := sendBurst(t, b, 333, 1); other[0] != 0 {
		t.Errorf("another chat was refused: retry_after %d", other[0])
	}
	clock.Advance(time.Second)
	if again := sendBurst(t, b, 222, 2); !slices.Equal(again, []int{0, 1}) {
		t.Errorf("after 1s: %v, want one more accepted", again)
	}
	if got, want := srv.TooManyRequests(), 4; got != want {
		t.Errorf("TooManyRequests = %d, want %d", got, want)
	}
}

func TestFloodLimitGroupPerMinute(t *testing.T) {
	clock := newClock()
	srv := newServer(t, standin.Options{Now: clock.Now, Flood: &standin.FloodLimits{}})
	b, _ := newBot(t, srv, 3*time.Second)
	const group = -1001557912345

	for i := range 20 {
		if r := sendBurst(t, b, group, 1); r[0] != 0 {
			t.Fatalf("message %d refused: retry_after %d", i+1, r[0])
		}
		clock.Advance(time.Second)
	}
	if r := sendBurst(t, b, group, 1); r[0] != 40 {
		t.Errorf("21st message in 20s: retry_after %d, want 40", r[0])
	}
	clock.Advance(40 * time.Second)
	if r := sendBurst(t, b, group, 1); r[0] != 0 {
		t.Errorf("after the window moved: retry_after %d, want accepted", r[0])
	}
}

func TestFloodLimitOverall(t *testing.T) {
	clock := newClock()
	srv := newServer(t, standin.Options{Now: clock.Now, Flood: &standin.FloodLimits{}})
	b, _ := newBot(t, srv, 3*time.Second)
	for chat := int64(1); chat <= 30; chat++ {
		if r := sendBurst(t, b, chat, 1); r[0] != 0 {
			t.Fatalf("chat %d refused", chat)
		}
	}
	if r := sendBurst(t, b, 31, 1); r[0] != 1 {
		t.Errorf("31st message in a second: retry_after %d, want 1", r[0])
	}
}

func TestFloodLimitOffByDefault(t *testing.T) {
	srv := newServer(t, standin.Options{})
	b, _ := newBot(t, srv, 3*time.Second)
	if got := sendBurst(t, b, 222, 10); !slices.Equal(got, make([]int, 10)) {
		t.Errorf("retry_after per send = %v, want all accepted", got)
	}
}

func TestFloodLimitCountsEveryPostingMethod(t *testing.T) {
	clock := newClock()
	srv := newServer(t, standin.Options{Now: clock.Now, Flood: &standin.FloodLimits{}})
	b, _ := newBot(t, srv, 3*time.Second)
	ctx := context.Background()
	first, err := b.SendPoll(ctx, &bot.SendPollParams{ChatID: 222, Question: "Q?", Options: options("a", "b")})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := b.SendDocument(ctx, &bot.SendDocumentParams{ChatID: 222, Document: upload("a.txt", []byte("a"))}); err != nil {
		t.Fatal(err)
	}
	if _, err := b.CopyMessage(ctx, &bot.CopyMessageParams{ChatID: 222, FromChatID: 222, MessageID: first.ID}); err != nil {
		t.Fatal(err)
	}
	_, err = b.ForwardMessage(ctx, &bot.ForwardMessageParams{ChatID: 222, FromChatID: 222, MessageID: first.ID})
	var tmr *bot.TooManyRequestsError
	if !errors.As(err, &tmr) || tmr.RetryAfter != 1 {
		t.Errorf("4th message in the chat's burst: %v, want retry after 1", err)
	}
	if got, want := srv.FloodRejections(), 1; got != want {
		t.Errorf("FloodRejections = %d, want %d", got, want)
	}
}
