package telegram_test

import (
	"context"
	"fmt"
	"path/filepath"
	"slices"
	"testing"
	"time"

	"golang.org/x/time/rate"

	"github.com/countersign/countersign/internal/pgtest"
	"github.com/countersign/countersign/journal"
	"github.com/countersign/countersign/telegram"
	"github.com/countersign/countersign/telegram/telegramtest"
	"github.com/countersign/countersign/tools"
)

// TestDefaultLimitsEarnNo429 sends a burst into one chat and across chats through a
// server that enforces Telegram's flood limits: the limiter spaces them so that
// none is refused.
func TestDefaultLimitsEarnNo429(t *testing.T) {
	t.Parallel()
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
	t.Parallel()
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
	t.Parallel()
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
	// A connection goes back to the pool just after its answer is read, so a
	// send of the next wave may find it not back yet and open one more: one a
	// wave is allowed for that. Without reuse it is one a send or so (80).
	if n, most := srv.Connections(), chats+1+(waves-1); n > most {
		t.Errorf("%d connections for %d waves of %d sends, want at most %d: the first wave's, getMe's and one a later wave", n, waves, chats, most)
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

// TestReplicasShareOneBudget: three replicas of one bot, sending at once to one
// chat and across many, keep together under limits each could reach alone:
// their sends take slots of pools they share in the journal. Telegram (the fake
// server, with the same limits) refuses none, and its record shows why: a
// chat's messages arrive a second apart whichever replica sent them, and no
// second holds more than the overall limit.
func TestReplicasShareOneBudget(t *testing.T) {
	t.Parallel()
	if testing.Short() {
		t.Skip("takes a few seconds of real time")
	}
	for _, b := range []struct {
		name  string
		fresh func(t *testing.T) string
	}{
		{"sqlite", func(t *testing.T) string { return filepath.Join(t.TempDir(), "journal.db") }},
		{"postgres", func(t *testing.T) string { return pgtest.Fresh(t) }},
	} {
		t.Run(b.name, func(t *testing.T) { testReplicasShareOneBudget(t, b.fresh(t)) })
	}
}

func testReplicasShareOneBudget(t *testing.T, name string) {
	const perSecond = 10
	srv := telegramtest.NewServer(t, telegramtest.Options{Token: token,
		Flood: &telegramtest.FloodLimits{PerSecond: perSecond, PerChatPerSecond: 1, ChatBurst: 1, GroupPerMinute: 20}})
	limits := telegram.Limits{Overall: perSecond, InSecond: perSecond, PerChat: 1, PerGroup: rate.Every(3 * time.Second), ChatBurst: 1}
	ctx := context.Background()
	var bots []*telegram.Bot
	for r := range 3 {
		j, err := journal.Open(ctx, name)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { j.Close() })
		if err := j.Join(ctx, telegram.Transport, fmt.Sprint("r", r+1), 10*time.Second); err != nil {
			t.Fatal(err)
		}
		tg, err := telegram.New(ctx, j, telegram.Options{Token: token, APIURL: srv.URL(), Limits: &limits})
		if err != nil {
			t.Fatal(err)
		}
		bots = append(bots, tg)
	}
	// One chat gets a message from each replica; 30 more go to 15 chats, two
	// each, from all three.
	type send struct {
		bot  int
		chat string
	}
	var sends []send
	for r := range 3 {
		sends = append(sends, send{r, "300"})
	}
	for i := range 30 {
		sends = append(sends, send{i % 3, fmt.Sprint(400 + i%15)})
	}
	errs := make(chan error, len(sends))
	for i, s := range sends {
		go func() {
			_, err := bots[s.bot].Sender().Send(ctx, tools.Message{Target: s.chat, Text: fmt.Sprint("m", i)})
			errs <- err
		}()
	}
	for range sends {
		if err := <-errs; err != nil {
			t.Errorf("send: %v", err)
		}
	}
	if n := srv.TooManyRequests(); n != 0 {
		t.Errorf("429s = %d, want 0", n)
	}
	byChat := map[int64][]time.Time{}
	var all []time.Time
	for _, c := range srv.CallsTo("sendMessage") {
		byChat[c.ChatID] = append(byChat[c.ChatID], c.Time)
		all = append(all, c.Time)
	}
	if len(all) != len(sends) {
		t.Fatalf("%d sendMessage calls, want %d", len(all), len(sends))
	}
	for chat, ts := range byChat {
		for i := 1; i < len(ts); i++ {
			if gap := ts[i].Sub(ts[i-1]); gap < time.Second {
				t.Errorf("chat %d: messages %v apart, want at least a second", chat, gap)
			}
		}
	}
	slices.SortFunc(all, time.Time.Compare)
	for i := perSecond; i < len(all); i++ {
		if d := all[i].Sub(all[i-perSecond]); d < time.Second {
			t.Errorf("%d messages arrived within %v, want at most %d in any second", perSecond+1, d, perSecond)
			break
		}
	}
}
