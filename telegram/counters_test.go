package telegram_test

import (
	"io"
	"net"
	"net/http"
	"testing"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/testutil"

	"github.com/countersign/countersign/telegram"
	"github.com/countersign/countersign/telegram/telegramtest"
)

func newCounter(name string) prometheus.Counter {
	return prometheus.NewCounter(prometheus.CounterOpts{Name: name, Help: name})
}

// A polling bot counts the updates it takes, once each, and the Bot API's 429s.
func TestCountersCountUpdatesAndTooManyRequests(t *testing.T) {
	t.Parallel()
	taken, throttled := newCounter("taken_total"), newCounter("throttled_total")
	counters := telegram.Counters{UpdatesTaken: taken, TooManyRequests: throttled}
	r := newRig(t, withOptions(func(o *telegram.Options) { o.Counters = counters }))
	r.srv.Inject(telegramtest.TooManyRequests(1).For("getUpdates"))
	r.waitFor("the 429", func(s *telegramtest.Server) bool { return s.TooManyRequests() == 1 })
	r.command(alice, "/ops")
	r.replyContaining(alice, "No operations yet")
	if got := testutil.ToFloat64(throttled); got != 1 {
		t.Errorf("429s counted = %v, want 1", got)
	}
	if got := testutil.ToFloat64(taken); got != 1 {
		t.Errorf("updates taken = %v, want 1", got)
	}
}

// The webhook's public paths answer without the secret; every other path still
// refuses a request without it; an update delivered twice is taken once.
func TestWebhookServesPublicPathsWithoutTheSecret(t *testing.T) {
	t.Parallel()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	const secret = "s3cret"
	taken := newCounter("taken_total")
	healthz := http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) { io.WriteString(w, "ok") })
	r := newRig(t, withWebhook(&telegram.Webhook{URL: "https://bot.example.org/hook", Secret: secret, Listener: ln,
		Public: map[string]http.Handler{"/healthz": healthz}}),
		withOptions(func(o *telegram.Options) { o.Counters.UpdatesTaken = taken }))
	r.waitFor("setWebhook", func(s *telegramtest.Server) bool { return s.Webhook().URL != "" })
	base := "http://" + ln.Addr().String()

	resp, err := http.Get(base + "/healthz")
	if err != nil {
		t.Fatal(err)
	}
	body, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if resp.StatusCode != http.StatusOK || string(body) != "ok" {
		t.Errorf("GET /healthz without the secret: %d %q, want 200 ok", resp.StatusCode, body)
	}
	for _, path := range []string{"/", "/healthz/", "/metrics"} {
		if got := postUpdate(t, http.DefaultClient, base+path, "", opsUpdate(7001)); got != http.StatusUnauthorized {
			t.Errorf("POST %s without the secret: %d, want 401", path, got)
		}
	}
	for range 2 {
		if got := postUpdate(t, http.DefaultClient, base+"/", secret, opsUpdate(7002)); got != http.StatusOK {
			t.Errorf("POST / with the secret: %d, want 200", got)
		}
	}
	r.replyContaining(alice, "No operations yet")
	if got := testutil.ToFloat64(taken); got != 1 {
		t.Errorf("updates taken = %v, want 1", got)
	}
}
