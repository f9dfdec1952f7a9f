package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"maps"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"
	"time"

	dto "github.com/prometheus/client_model/go"
	"github.com/prometheus/common/expfmt"
	prommodel "github.com/prometheus/common/model"

	"github.com/countersign/countersign/internal/syncbuf"
	"github.com/countersign/countersign/journal"
	"github.com/countersign/countersign/telegram/telegramtest"
)

// runningBot is "countersign run" in this process against the fake Bot API.
type runningBot struct {
	t    *testing.T
	srv  *telegramtest.Server
	log  *syncbuf.Buffer
	done chan int
	stop context.CancelFunc
}

// startInProcess runs "countersign run" with flags against srv, and stops it when the test ends.
func startInProcess(t *testing.T, srv *telegramtest.Server, data string, flags ...string) *runningBot {
	t.Helper()
	env := map[string]string{"TELEGRAM_BOT_TOKEN": childToken, "TELEGRAM_API_URL": srv.URL(),
		"BOT_OPERATORS": "100", "BOT_APPROVERS": "100"}
	ctx, cancel := context.WithCancel(context.Background())
	b := &runningBot{t: t, srv: srv, log: &syncbuf.Buffer{}, done: make(chan int, 1), stop: cancel}
	args := append([]string{"run", "-data", data, "-policies", "../../policies.yaml", "-poll-timeout", "1s"}, flags...)
	go func() {
		b.done <- Main(ctx, args, Env{Stdin: strings.NewReader(""), Stdout: b.log, Stderr: b.log, Getenv: func(k string) string { return env[k] }})
	}()
	t.Cleanup(func() {
		cancel()
		select {
		case <-b.done:
		case <-time.After(20 * time.Second):
			t.Errorf("countersign run did not stop after its context ended\n%s", b.log.String())
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
			b.t.Fatalf("countersign run ended with %d before %q\n%s", code, msg, b.log.String())
		case <-time.After(20 * time.Millisecond): // polling the log another goroutine writes
		}
	}
	b.t.Fatalf("no %q in the log\n%s", msg, b.log.String())
	return ""
}

func (b *runningBot) wait(what string, cond func(*telegramtest.Server) bool) {
	b.t.Helper()
	if err := b.srv.WaitTimeout(childWait, cond); err != nil {
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

// exposition is a scrape of /metrics, parsed from the text format.
type exposition map[string]*dto.MetricFamily

// scrape GETs url and parses its exposition; it fails the test unless the answer
// is 200 in the text format.
func scrape(t *testing.T, url string) exposition {
	t.Helper()
	code, body := get(t, url)
	if code != http.StatusOK {
		t.Fatalf("GET %s: %d\n%s", url, code, body)
	}
	p := expfmt.NewTextParser(prommodel.UTF8Validation)
	mfs, err := p.TextToMetricFamilies(strings.NewReader(body))
	if err != nil {
		t.Fatalf("GET %s: not the text format: %v\n%s", url, err, body)
	}
	return mfs
}

// scrapeUntil scrapes url until cond holds of its exposition, or fails after a
// deadline; it returns the last exposition.
func scrapeUntil(t *testing.T, url, what string, cond func(exposition) bool) exposition {
	t.Helper()
	deadline := time.NewTimer(10 * time.Second)
	defer deadline.Stop()
	tick := time.NewTicker(20 * time.Millisecond) // polling a count another goroutine moves
	defer tick.Stop()
	for {
		e := scrape(t, url)
		if cond(e) {
			return e
		}
		select {
		case <-deadline.C:
			t.Fatalf("/metrics never showed %s:\n%s", what, e)
		case <-tick.C:
		}
	}
}

// selector is a series as PromQL names it without operators: name, or
// name{label="value",...}.
var selector = regexp.MustCompile(`^([a-zA-Z_:][a-zA-Z0-9_:]*)(?:\{(.*)\})?$`)

// value returns the value of the series sel: a counter's, a gauge's, or for a
// histogram's name_count and name_sum its count and sum. ok is false when the
// exposition has no such series (its labels exactly those of sel).
func (e exposition) value(sel string) (v float64, ok bool) {
	m := selector.FindStringSubmatch(sel)
	if m == nil {
		panic("not a selector: " + sel)
	}
	name, want := m[1], map[string]string{}
	for _, l := range strings.Split(m[2], ",") {
		if k, v, found := strings.Cut(l, "="); found {
			want[strings.TrimSpace(k)] = strings.Trim(strings.TrimSpace(v), `"`)
		}
	}
	read := func(m *dto.Metric) float64 {
		return m.GetCounter().GetValue() + m.GetGauge().GetValue() + m.GetUntyped().GetValue()
	}
	mf := e[name]
	if base, suffix, found := cutSuffix(name); mf == nil && found && e[base].GetType() == dto.MetricType_HISTOGRAM {
		mf = e[base]
		read = func(m *dto.Metric) float64 {
			if suffix == "_count" {
				return float64(m.GetHistogram().GetSampleCount())
			}
			return m.GetHistogram().GetSampleSum()
		}
	}
	for _, s := range mf.GetMetric() {
		if labelsOf(s) == fmt.Sprint(want) {
			return read(s), true
		}
	}
	return 0, false
}

// cutSuffix cuts _count or _sum off a histogram's series name.
func cutSuffix(name string) (base, suffix string, found bool) {
	for _, suffix := range []string{"_count", "_sum"} {
		if base, found := strings.CutSuffix(name, suffix); found {
			return base, suffix, true
		}
	}
	return name, "", false
}

func labelsOf(m *dto.Metric) string {
	l := map[string]string{}
	for _, p := range m.GetLabel() {
		l[p.GetName()] = p.GetValue()
	}
	return fmt.Sprint(l)
}

// want fails for each series of want that e lacks or has with another value.
func (e exposition) want(t *testing.T, want map[string]float64) {
	t.Helper()
	for sel, w := range want {
		if got, ok := e.value(sel); !ok || got != w {
			t.Errorf("/metrics: %s = %v (there: %v), want %v", sel, got, ok, w)
		}
	}
}

// String is the exposition in the text format, for a failure's message.
func (e exposition) String() string {
	var b strings.Builder
	for _, name := range slices.Sorted(maps.Keys(e)) {
		expfmt.MetricFamilyToText(&b, e[name])
	}
	return b.String()
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
	e := scrape(t, base+"/metrics")
	e.want(t, map[string]float64{"countersign_updates_taken_total": 1,
		`countersign_operations{state="awaiting_approval"}`: 1, `countersign_operations{state="committed"}`: 0,
		"countersign_commit_seconds_count": 0, "countersign_telegram_429_total": 0, "countersign_unknown_total": 0,
		"countersign_leader": 1, "countersign_approvals_near_expiry": 0, `countersign_replica_info{replica="r1"}`: 1})
	for _, name := range []string{"go_goroutines", "process_start_time_seconds"} { // the runtime's and the process's
		if _, ok := e.value(name); !ok {
			t.Errorf("/metrics lacks %s:\n%s", name, e)
		}
	}
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
	// The move to committed is journaled after Telegram's answer, and the attempt
	// counted as it is: wait for both.
	e := scrapeUntil(t, base+"/metrics", "a commit attempt, committed", func(e exposition) bool {
		n, _ := e.value("countersign_commit_seconds_count")
		committed, _ := e.value(`countersign_operations{state="committed"}`)
		return n == 1 && committed == 1
	})
	e.want(t, map[string]float64{"countersign_updates_taken_total": 2, `countersign_operations{state="committed"}`: 1,
		`countersign_operations{state="awaiting_approval"}`: 0, "countersign_leader": 1})
	if mf := e["countersign_replica_info"]; len(mf.GetMetric()) != 1 || labelsOf(mf.GetMetric()[0]) == "map[]" {
		t.Errorf("/metrics lacks the default replica name:\n%s", e)
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

// With -metrics-listen, /metrics is served there and not on the webhook's public
// listener, which still answers the health checks a load balancer asks; without
// it, the webhook's listener serves all three.
func TestMetricsListenTakesMetricsOffTheWebhook(t *testing.T) {
	for _, c := range []struct {
		name        string
		flags       []string
		hookMetrics int // GET /metrics on the webhook's listener
	}{
		{"webhook alone", nil, http.StatusOK},
		{"webhook and -metrics-listen", []string{"-metrics-listen", "127.0.0.1:0"}, http.StatusUnauthorized},
	} {
		t.Run(c.name, func(t *testing.T) {
			srv := telegramtest.NewServer(t, telegramtest.Options{Token: childToken})
			flags := append([]string{"-webhook-listen", "127.0.0.1:0", "-webhook-url", "https://bot.example.org/hook"}, c.flags...)
			bot := startInProcess(t, srv, t.TempDir(), flags...)
			hook := "http://" + bot.addr("webhook serving")
			bases := []string{hook}
			if c.flags != nil {
				bases = append(bases, "http://"+bot.addr("health and metrics serving"))
			}
			for _, base := range bases {
				for _, path := range []string{"/healthz", "/readyz"} {
					if code, body := get(t, base+path); code != http.StatusOK || body != "ok\n" {
						t.Errorf("GET %s%s: %d %q, want 200 ok", base, path, code, body)
					}
				}
			}
			code, body := get(t, hook+"/metrics")
			if exposed := strings.Contains(body, "countersign_"); code != c.hookMetrics || exposed != (c.hookMetrics == http.StatusOK) {
				t.Errorf("GET /metrics on the webhook's listener: %d %q, want %d", code, body, c.hookMetrics)
			}
			e := scrape(t, bases[len(bases)-1]+"/metrics")
			if _, ok := e.value("countersign_leader"); !ok {
				t.Errorf("/metrics on %s lacks countersign_leader:\n%s", bases[len(bases)-1], e)
			}
		})
	}
}

// fakeOperator is what the metrics read of an operator, as a test sets it.
type fakeOperator struct {
	leading bool
	near    int
	err     error
}

func (f fakeOperator) Leading() (bool, <-chan struct{}) { return f.leading, nil }

func (f fakeOperator) ApprovalsNearExpiry(context.Context) (int, error) { return f.near, f.err }

// Each scrape reads the journal and the operator as they are then; a reading
// that fails leaves its metric out of a 200 answer with the rest, and is logged.
func TestMetricsReadAtScrape(t *testing.T) {
	for _, c := range []struct {
		name     string
		operator operatorView // nil: not running yet
		closed   bool         // the journal does not answer
		want     map[string]float64
		absent   []string
		warning  bool
	}{
		{name: "before the operator runs", want: map[string]float64{"countersign_leader": 0, `countersign_operations{state="unknown"}`: 0},
			absent: []string{"countersign_approvals_near_expiry"}},
		{name: "leading, two approvals near expiry", operator: fakeOperator{leading: true, near: 2},
			want: map[string]float64{"countersign_leader": 1, "countersign_approvals_near_expiry": 2}},
		{name: "not leading", operator: fakeOperator{}, want: map[string]float64{"countersign_leader": 0, "countersign_approvals_near_expiry": 0}},
		{name: "the approvals are not read", operator: fakeOperator{leading: true, err: errors.New("journal: approvals near their expiry: gone")},
			want: map[string]float64{"countersign_leader": 1, `countersign_operations{state="committed"}`: 0}, absent: []string{"countersign_approvals_near_expiry"}, warning: true},
		{name: "the journal does not answer", operator: fakeOperator{leading: true, near: 1}, closed: true,
			want:   map[string]float64{"countersign_leader": 1, "countersign_approvals_near_expiry": 1, "countersign_unknown_total": 0},
			absent: []string{`countersign_operations{state="committed"}`}, warning: true},
	} {
		t.Run(c.name, func(t *testing.T) {
			j, err := journal.Open(context.Background(), filepath.Join(t.TempDir(), "journal.db"))
			if err != nil {
				t.Fatal(err)
			}
			defer j.Close()
			var log syncbuf.Buffer
			m := newBotMetrics(j, "r1")
			if c.operator != nil {
				m.follow(c.operator)
			}
			if c.closed {
				j.Close()
			}
			srv := httptest.NewServer(m.handler(newLogger(&log)))
			defer srv.Close()
			e := scrape(t, srv.URL)
			e.want(t, c.want)
			// A scrape counts itself after it is gathered: the next one shows it.
			failed, _ := scrape(t, srv.URL).value(`promhttp_metric_handler_errors_total{cause="gathering"}`)
			if got := failed == 1; got != c.warning {
				t.Errorf("scrapes with a metric left out before the second: %v, want 1 if and only if a warning: %v", failed, c.warning)
			}
			for _, sel := range c.absent {
				if v, ok := e.value(sel); ok {
					t.Errorf("/metrics has %s = %v, want it left out", sel, v)
				}
			}
			if got := strings.Contains(log.String(), "level=WARN"); got != c.warning {
				t.Errorf("a warning logged: %v, want %v\n%s", got, c.warning, log.String())
			}
		})
	}
}

// Each metric the bot exports has the type its README row says, under the name
// operators scrape.
func TestMetricsTypes(t *testing.T) {
	e := scrapeTestRegistry(t)
	for name, want := range map[string]dto.MetricType{
		"countersign_updates_taken_total":   dto.MetricType_COUNTER,
		"countersign_telegram_429_total":    dto.MetricType_COUNTER,
		"countersign_unknown_total":         dto.MetricType_COUNTER,
		"countersign_commit_seconds":        dto.MetricType_HISTOGRAM,
		"countersign_operations":            dto.MetricType_GAUGE,
		"countersign_approvals_near_expiry": dto.MetricType_GAUGE,
		"countersign_leader":                dto.MetricType_GAUGE,
		"countersign_replica_info":          dto.MetricType_GAUGE,
	} {
		if mf, ok := e[name]; !ok || mf.GetType() != want {
			t.Errorf("%s: %v (there: %v), want %v", name, mf.GetType(), ok, want)
		}
	}
	if got, want := len(e["countersign_operations"].GetMetric()), len(journal.States()); got != want {
		t.Errorf("countersign_operations has %d series, want one for each of the %d states", got, want)
	}
}

// scrapeTestRegistry scrapes over HTTP the metrics of a bot on a fresh journal
// whose operator leads: every metric the binary exports.
func scrapeTestRegistry(t *testing.T) exposition {
	t.Helper()
	j, err := journal.Open(context.Background(), filepath.Join(t.TempDir(), "journal.db"))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { j.Close() })
	m := newBotMetrics(j, "r1")
	m.follow(fakeOperator{leading: true})
	srv := httptest.NewServer(m.handler(newLogger(io.Discard)))
	t.Cleanup(srv.Close)
	return scrape(t, srv.URL)
}
