package telegram_test

import (
	"context"
	"fmt"
	"path/filepath"
	"testing"
	"time"

	"github.com/countersign/countersign/journal"
	"github.com/countersign/countersign/telegram"
	"github.com/countersign/countersign/telegram/telegramtest"
	"github.com/countersign/countersign/tools"
)

// TestDefaultLimitsEarnNo429 sends a burst into one chat and across chats through a
// server that enforces Telegram's flood limits: the limiter spaces them so that
// none is refused.
func TestDefaultLimitsEarnNo429(t *testing.T) {
	if testing.Short() {
		t.Skip("takes a few seconds of real time")
	}
	srv, tg := flooded(t)
	errs := make(chan error, 40)
	for i := range 40 {
		chat := fmt.Sprint(300 + i%10) // 10 chats, 4 messages each
		go func() {
			_, err := tg.Sender().Send(context.Background(), tools.Message{Target: chat, Text: fmt.Sprint("m", i)})
			errs <- err
		}()
	}
	for range 40 {
		if err := <-errs; err != nil {
			t.Errorf("send: %v", err)
		}
	}
	if n := srv.TooManyRequests(); n != 0 {
		t.Errorf("429s = %d, want 0", n)
	}
}

// TestLateArrivalEarnsNo429: a send that reaches Telegram late (held on its way)
// must not let the chat's next message arrive within a second of it. Spacing
// sends from when they leave, by any margin smaller than the delay, earns a 429.
func TestLateArrivalEarnsNo429(t *testing.T) {
	if testing.Short() {
		t.Skip("takes a few seconds of real time")
	}
	srv, tg := flooded(t)
	srv.Inject(telegramtest.Delay(400 * time.Millisecond).For("sendMessage").OnCall(1))
	for i := range 3 {
		if _, err := tg.Sender().Send(context.Background(), tools.Message{Target: "300", Text: fmt.Sprint("m", i)}); err != nil {
			t.Errorf("send %d: %v", i, err)
		}
	}
	if n := srv.TooManyRequests(); n != 0 {
		t.Errorf("429s = %d, want 0", n)
	}
}

// TestSendsReuseConnections: waves of sends across many chats reuse the
// connections the first wave opened, instead of opening (against Telegram:
// a TLS handshake) one for nearly every send.
func TestSendsReuseConnections(t *testing.T) {
	srv := telegramtest.NewServer(t, telegramtest.Options{Token: token})
	j, err := journal.Open(context.Background(), filepath.Join(t.TempDir(), "journal.db"))
	if err != nil {
		t.Fatal(err)
	}
	defer j.Close()
	tg, err := telegram.New(context.Background(), j, telegram.Options{Token: token, APIURL: srv.URL(), Limits: fast})
	if err != nil {
		t.Fatal(err)
	}
	const chats, waves = 20, 4
	for w := range waves {
		errs := make(chan error, chats)
		for c := range chats {
			go func() {
				_, err := tg.Sender().Send(context.Background(), tools.Message{Target: fmt.Sprint(300 + c), Text: fmt.Sprint("wave ", w)})
				errs <- err
			}()
		}
		for range chats {
			if err := <-errs; err != nil {
				t.Fatalf("send: %v", err)
			}
		}
	}
	if n := srv.Connections(); n > chats+1 {
		t.Errorf("%d connections for %d waves of %d sends, want at most %d: the first wave's and getMe's", n, waves, chats, chats+1)
	}
}

// flooded is a bot with the default limits over a fake Telegram that answers 429
// past its documented flood limits.
func flooded(t *testing.T) (*telegramtest.Server, *telegram.Bot) {
	t.Helper()
	srv := telegramtest.NewServer(t, telegramtest.Options{Token: token,
		Flood: &telegramtest.FloodLimits{PerSecond: 30, PerChatPerSecond: 1, ChatBurst: 1, GroupPerMinute: 20}})
	j, err := journal.Open(context.Background(), filepath.Join(t.TempDir(), "journal.db"))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { j.Close() })
	tg, err := telegram.New(context.Background(), j, telegram.Options{Token: token, APIURL: srv.URL()})
	if err != nil {
		t.Fatal(err)
	}
	return srv, tg
}
