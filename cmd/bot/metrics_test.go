package main

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/countersign/countersign/internal/syncbuf"
	"github.com/countersign/countersign/journal"
	"github.com/countersign/countersign/telegram/telegramtest"
)

// runningBot is "bot run" in this process against the fake Bot API.
type runningBot struct {
	t    *testing.T
	srv  *telegramtest.Server
	log  *syncbuf.Buffer
	done chan int
	stop context.CancelFunc
}

// startInProcess runs "bot run" with flags against srv, and stops it when the test ends.
func startInProcess(t *testing.T, srv *telegramtest.Server, data string, flags ...string) *runningBot {
	t.Helper()
	env := map[string]string{"TELEGRAM_BOT_TOKEN": childToken, "TELEGRAM_API_URL": srv.URL(), "COUNTERSIGN_POLL_TIMEOUT": "1s",
		"BOT_OPERATORS": "100", "BOT_APPROVERS": "100"}
	ctx, cancel := context.WithCancel(context.Background())
	b := &runningBot{t: t, srv: srv, log: &syncbuf.Buffer{}, done: make(chan int, 1), stop: cancel}
	args := append([]string{"run", "-data", data, "-policies", "../../policies.yaml"}, flags...)
	go func() {
		b.done <- Main(ctx, args, Env{Stdin: strings.NewReader(""), Stdout: b.log, Stderr: b.log, Getenv: func(k string) string { return env[k] }})
	}()
	t.Cleanup(func() {
		cancel()
		select {
		case <-b.done:
		case <-time.After(20 * time.Second):
			t.Errorf("bot run did not stop after its context ended\n%s", b.log.String())
		}
	})
	return b
}

// addr waits for the log line that says where msg is served, and returns the address.
func (b *runningBot) addr(msg string) string {
	b.t.Helper()
	re := regexp.MustCompile(`msg="` + regexp.QuoteMeta(msg) + `"[^\n]* listen=(\S+)`)
	deadline := time.Now().Add(20 * time.Second)
	for time.Now().Before(deadline) {
		if m := re.FindStringSubmatch(b.log.String()); m != nil {
			return m[1]
		}
		select {
		case code := <-b.done:
			b.t.Fatalf("bot run ended with %d before %q\n%s", code, msg, b.log.String())
		case <-time.After(20 * time.Millisecond): // polling the log another goroutine writes
		}
	}
	b.t.Fatalf("no %q in the log\n%s", msg, b.log.String())
	return ""
}

func (b *runningBot) wait(what string, cond func(*telegramtest.Server) bool) {
	b.t.Helper()
	if err := b.srv.WaitTimeout(20*time.Second, cond); err != nil {
		b.t.Fatalf("waiting for %s: %v\nbot log:\n%s", what, err, b.log.String())
	}
}

func get(t *testing.T, url string) (int, string) {
	t.Helper()
	resp, err := http.Get(url)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	body, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, string(body)
}

// scrapeUntil scrapes url until its exposition has the line want, or fails
// after a deadline; it returns the last exposition.
func scrapeUntil(t *testing.T, url, want string) string {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for {
		_, body := get(t, url)
		if strings.Contains("\n"+body, "\n"+want+"\n") || time.Now().After(deadline) {
			return body
		}
		time.Sleep(20 * time.Millisecond) // polling a count another goroutine moves
	}
}

// wantLines fails for each line of want missing from the exposition got.
func wantLines(t *testing.T, got string, want ...string) {
	t.Helper()
	lines := strings.Split(got, "\n")
	for _, w := range want {
		found := false
		for _, l := range lines {
			found = found || l == w
		}
		if !found {
			t.Errorf("/metrics lacks the line %q:\n%s", w, got)
		}
	}
}

// sendUpdate is the operator's "/send 222 text" as Telegram posts it to a webhook.
func sendUpdate(id int, text string) string {
	cmd := "/send 222 " + text
	return fmt.Sprintf(`{"update_id":%d,"message":{"message_id":%d,"date":%d,"from":{"id":100,"is_bot":false,"first_name":"Op"},"chat":{"id":100,"type":"private"},"text":%q,"entities":[{"type":"bot_command","offset":0,"length":5}]}}`,
		id, id, time.Now().Unix(), cmd)
}

// In webhook mode the webhook's listener answers /healthz, /readyz and /metrics
// without the secret, while the webhook itself still refuses a request without
// it; the secret registered is the one derived from the token; an update taken
// shows in the metrics, and its operation by state.
func TestWebhookServesHealthAndMetrics(t *testing.T) {
	srv := telegramtest.NewServer(t, telegramtest.Options{Token: childToken})
	bot := startInProcess(t, srv, t.TempDir(), "-webhook-listen", "127.0.0.1:0", "-webhook-url", "https://bot.example.org/hook", "-replica", "r1")
	base := "http://" + bot.addr("webhook serving")
	if got, want := srv.Webhook().SecretToken, webhookSecret(childToken); got != want {
		t.Errorf("registered secret %q, want the derived %q", got, want)
	}
	for path, want := range map[string]string{"/healthz": "ok\n", "/readyz": "ok\n"} {
		if code, body := get(t, base+path); code != http.StatusOK || body != want {
			t.Errorf("GET %s: %d %q, want 200 %q", path, code, body, want)
		}
	}
	post := func(secret, body string) int {
		req, _ := http.NewRequest(http.MethodPost, base+"/", strings.NewReader(body))
		if secret != "" {
			req.Header.Set("X-Telegram-Bot-Api-Secret-Token", secret)
		}
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		return resp.StatusCode
	}
	if code := post("", sendUpdate(9001, "hello")); code != http.StatusUnauthorized {
		t.Errorf("POST / without the secret: %d, want 401", code)
	}
	if code := post(webhookSecret(childToken), sendUpdate(9001, "hello")); code != http.StatusOK {
		t.Fatalf("POST / with the secret: %d, want 200\n%s", code, bot.log.String())
	}
	bot.wait("the approval card", func(s *telegramtest.Server) bool {
		for _, m := range s.Messages(100) {
			if strings.Contains(string(m.ReplyMarkup), "ap1:") {
				return true
			}
		}
		return false
	})
	code, body := get(t, base+"/metrics")
	if code != http.StatusOK {
		t.Fatalf("GET /metrics: %d\n%s", code, body)
	}
	wantLines(t, body,
		"# TYPE countersign_updates_taken_total counter", "countersign_updates_taken_total 1",
		"# TYPE countersign_operations gauge", `countersign_operations{state="awaiting_approval"} 1`, `countersign_operations{state="committed"} 0`,
		"# TYPE countersign_commit_seconds histogram", "countersign_commit_seconds_count 0",
		"countersign_telegram_429_total 0", "countersign_unknown_total 0", "countersign_leader 1",
		`countersign_replica_info{replica="r1"} 1`)
	if !strings.Contains(bot.log.String(), "replica=r1") || strings.Contains(bot.log.String(), childToken) {
		t.Errorf("the log lacks replica=r1 or holds the token:\n%s", bot.log.String())
	}
}

// In polling mode -metrics-listen serves the same paths; an approved send shows
// as a commit attempt, and its operation as committed.
func TestMetricsListenInPollingMode(t *testing.T) {
	srv := telegramtest.NewServer(t, telegramtest.Options{Token: childToken})
	bot := startInProcess(t, srv, t.TempDir(), "-metrics-listen", "127.0.0.1:0")
	base := "http://" + bot.addr("health and metrics serving")
	bot.wait("the first poll", func(s *telegramtest.Server) bool { return s.Polling() })
	if code, body := get(t, base+"/healthz"); code != http.StatusOK || body != "ok\n" {
		t.Errorf("GET /healthz: %d %q", code, body)
	}
	srv.PushMessage(100, 100, "/send 222 hello")
	approveCard(srv, bot.wait)
	bot.wait("the delivery", func(s *telegramtest.Server) bool { return len(s.Messages(222)) == 1 })
	// The move to committed is journaled after Telegram's answer: wait for it.
	body := scrapeUntil(t, base+"/metrics", "countersign_commit_seconds_count 1")
	wantLines(t, body, "countersign_updates_taken_total 2", `countersign_operations{state="committed"} 1`,
		`countersign_operations{state="awaiting_approval"} 0`, "countersign_commit_seconds_count 1", `countersign_commit_seconds_bucket{le="+Inf"} 1`,
		"countersign_leader 1")
	if !strings.Contains(body, "countersign_replica_info{replica=") {
		t.Errorf("/metrics lacks the default replica name:\n%s", body)
	}
	if code, _ := get(t, base+"/"); code != http.StatusNotFound {
		t.Errorf("GET / on the metrics listener: %d, want 404", code)
	}
}

// /readyz is 503 when the journal does not answer, with a reason that names no
// database.
func TestReadyzWhenTheJournalDoesNotAnswer(t *testing.T) {
	path := filepath.Join(t.TempDir(), "journal.db")
	j, err := journal.Open(context.Background(), path)
	if err != nil {
		t.Fatal(err)
	}
	h := readyz(j, newLogger(io.Discard))
	rec := httptest.NewRecorder()
	h.ServeHTTP(rec, httptest.NewRequest(http.MethodGet, "/readyz", nil))
	if rec.Code != http.StatusOK {
		t.Errorf("open journal: %d %q, want 200", rec.Code, rec.Body)
	}
	j.Close()
	rec = httptest.NewRecorder()
	h.ServeHTTP(rec, httptest.NewRequest(http.MethodGet, "/readyz", nil))
	if rec.Code != http.StatusServiceUnavailable || !strings.Contains(rec.Body.String(), "not ready") || strings.Contains(rec.Body.String(), path) {
		t.Errorf("closed journal: %d %q, want 503 with a reason naming no file", rec.Code, rec.Body)
	}
}

// Replicas of one bot derive one webhook secret from its token, which the
// secret does not show; TELEGRAM_WEBHOOK_SECRET, when set, is used as it is.
func TestWebhookSecretIsSharedByReplicas(t *testing.T) {
	a, b := webhookSecret(childToken), webhookSecret(childToken)
	other := webhookSecret("7001234567:AAHdqTcvCH1vGWJxfSeofSAs0K5PALDsab")
	if a != b || a == other {
		t.Errorf("secrets %q, %q, other token %q; want the same for one token, another for another", a, b, other)
	}
	if !regexp.MustCompile(`^[0-9a-f]{48}$`).MatchString(a) {
		t.Errorf("secret %q is not 48 hex digits (Telegram allows A-Z a-z 0-9 _ -, 1 to 256)", a)
	}
	_, key, _ := strings.Cut(childToken, ":")
	if strings.Contains(a, childToken) || strings.Contains(a, key) || strings.Contains(a, "7001234567") {
		t.Errorf("secret %q shows the token", a)
	}
	env := func(m map[string]string) Env { return Env{Getenv: func(k string) string { return m[k] }} }
	if w := webhook(":0", "https://h/x", childToken, env(map[string]string{"TELEGRAM_BOT_TOKEN": childToken})); w.Secret != a {
		t.Errorf("webhook secret without TELEGRAM_WEBHOOK_SECRET = %q, want the derived %q", w.Secret, a)
	}
	if w := webhook(":0", "https://h/x", childToken, env(map[string]string{"TELEGRAM_BOT_TOKEN": childToken, "TELEGRAM_WEBHOOK_SECRET": "mine"})); w.Secret != "mine" {
		t.Errorf("webhook secret = %q, want TELEGRAM_WEBHOOK_SECRET's", w.Secret)
	}
}
