package standin_test

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"os"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/go-telegram/bot"
	"github.com/go-telegram/bot/models"

	"github.com/countersign/countersign/telegram/standin"
)

// waitLimit bounds every wait in these tests.
const waitLimit = 10 * time.Second

// newBot connects a go-telegram/bot client to srv over real HTTP. Polls
// are held for pollTimeout-1s; errors go to the returned channel.
func newBot(t *testing.T, srv *standin.Server, pollTimeout time.Duration, opts ...bot.Option) (*bot.Bot, <-chan error) {
	t.Helper()
	errs := make(chan error, 100)
	transport := &http.Transport{}
	t.Cleanup(transport.CloseIdleConnections)
	base := []bot.Option{
		bot.WithServerURL(srv.URL()),
		bot.WithHTTPClient(pollTimeout, &http.Client{Transport: transport, Timeout: pollTimeout + 5*time.Second}),
		bot.WithErrorsHandler(func(err error) {
			select {
			case errs <- err:
			default:
			}
		}),
		bot.WithDefaultHandler(func(context.Context, *bot.Bot, *models.Update) {}),
	}
	b, err := bot.New(srv.Token(), append(base, opts...)...)
	if err != nil {
		t.Fatalf("bot.New: %v", err)
	}
	return b, errs
}

// startBot runs b.Start until the test ends.
func startBot(t *testing.T, b *bot.Bot) {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() {
		defer close(done)
		b.Start(ctx)
	}()
	t.Cleanup(func() {
		cancel()
		<-done
	})
}

// updateSink is a default handler that forwards updates to a channel.
func updateSink() (bot.Option, <-chan *models.Update) {
	ch := make(chan *models.Update, 100)
	return bot.WithDefaultHandler(func(_ context.Context, _ *bot.Bot, u *models.Update) { ch <- u }), ch
}

func receive[T any](t *testing.T, ch <-chan T) T {
	t.Helper()
	select {
	case v := <-ch:
		return v
	case <-time.After(waitLimit):
		t.Fatalf("nothing received within %v", waitLimit)
		panic("unreachable")
	}
}

func waitFor(t *testing.T, srv *standin.Server, what string, cond func(*standin.Server) bool) {
	t.Helper()
	if err := srv.WaitTimeout(waitLimit, cond); err != nil {
		t.Fatalf("waiting for %s: %v", what, err)
	}
}

// apiReply is a decoded Bot API response.
type apiReply struct {
	Status      int             `json:"-"`
	OK          bool            `json:"ok"`
	Result      json.RawMessage `json:"result"`
	ErrorCode   int             `json:"error_code"`
	Description string          `json:"description"`
	Parameters  struct {
		RetryAfter      int   `json:"retry_after"`
		MigrateToChatID int64 `json:"migrate_to_chat_id"`
	} `json:"parameters"`
}

// post sends a urlencoded call the way other Bot API clients do.
func post(t *testing.T, srv *standin.Server, method string, form url.Values) apiReply {
	t.Helper()
	return postToken(t, srv, srv.Token(), method, form)
}

func postToken(t *testing.T, srv *standin.Server, token, method string, form url.Values) apiReply {
	t.Helper()
	resp, err := http.PostForm(srv.URL()+"/bot"+token+"/"+method, form)
	if err != nil {
		t.Fatalf("%s: %v", method, err)
	}
	return decodeReply(t, resp)
}

func decodeReply(t *testing.T, resp *http.Response) apiReply {
	t.Helper()
	defer resp.Body.Close()
	body, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatalf("read reply: %v", err)
	}
	var r apiReply
	if err := json.Unmarshal(body, &r); err != nil {
		t.Fatalf("decode reply %q: %v", body, err)
	}
	r.Status = resp.StatusCode
	return r
}

// fixture reads a file from testdata.
func fixture(t *testing.T, name string) []byte {
	t.Helper()
	b, err := os.ReadFile("testdata/" + name)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// fixtureReply decodes a fixture holding a Bot API response.
func fixtureReply(t *testing.T, name string) apiReply {
	t.Helper()
	var r apiReply
	if err := json.Unmarshal(fixture(t, name), &r); err != nil {
		t.Fatal(err)
	}
	return r
}

// manualClock is a clock tests move by hand.
type manualClock struct {
	mu  sync.Mutex
	now time.Time
}

func newClock() *manualClock {
	return &manualClock{now: time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC)}
}

func (c *manualClock) Now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.now
}

func (c *manualClock) Advance(d time.Duration) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.now = c.now.Add(d)
}

// logBuffer collects Logf output.
type logBuffer struct {
	mu sync.Mutex
	b  strings.Builder
}

func (l *logBuffer) Logf(format string, args ...any) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.b.WriteString(strings.TrimSpace(fmt.Sprintf(format, args...)) + "\n")
}

func (l *logBuffer) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.String()
}

func sendText(ctx context.Context, b *bot.Bot, chatID int64, text string) (*models.Message, error) {
	return b.SendMessage(ctx, &bot.SendMessageParams{ChatID: chatID, Text: text})
}

// newServer starts a server that is closed when the test ends (as
// telegramtest.NewServer does, which these tests cannot import).
func newServer(tb testing.TB, opts standin.Options) *standin.Server {
	tb.Helper()
	s := standin.New(opts)
	tb.Cleanup(s.Close)
	return s
}
