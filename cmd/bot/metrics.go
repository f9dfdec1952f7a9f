package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"maps"
	"net"
	"net/http"
	"sync/atomic"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"
	"github.com/prometheus/client_golang/prometheus/promhttp"

	"github.com/countersign/countersign/internal/httpserve"
	"github.com/countersign/countersign/journal"
	"github.com/countersign/countersign/operator"
	"github.com/countersign/countersign/telegram"
)

// botMetrics are what a countersign run process exports at /metrics (docs/operations.md: Health and
// metrics), from a registry of its own: the Go runtime's and the process's, the
// counts of what this process did since it started, and what the journal and the
// operator hold, read at each scrape and kept nowhere else.
type botMetrics struct {
	reg      *prometheus.Registry
	counters telegram.Counters
	commit   prometheus.Histogram
	unknown  prometheus.Counter
	// live reads the operator at each scrape, once it runs.
	live *liveCollector
}

// commitBuckets are the upper bounds of commit_seconds: a send to the Bot API
// takes tens to hundreds of milliseconds; the last bounds catch its 30 s timeout.
var commitBuckets = []float64{0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60}

func newBotMetrics(j *journal.Journal, replica string) *botMetrics {
	counter := func(name, help string) prometheus.Counter {
		return prometheus.NewCounter(prometheus.CounterOpts{Name: name, Help: help})
	}
	taken := counter("countersign_updates_taken_total", "Updates this process stored fresh in the inbox.")
	throttled := counter("countersign_telegram_429_total", "429 Too Many Requests answers from the Bot API seen by this process.")
	m := &botMetrics{reg: prometheus.NewRegistry(),
		counters: telegram.Counters{UpdatesTaken: taken, TooManyRequests: throttled},
		commit: prometheus.NewHistogram(prometheus.HistogramOpts{Name: "countersign_commit_seconds",
			Help: "Commit attempts made by this process: seconds from the move to committing to the outcome.", Buckets: commitBuckets}),
		unknown: counter("countersign_unknown_total", "Operations this process moved to unknown (outcome to be verified by a person)."),
		live:    &liveCollector{journal: j},
	}
	m.reg.MustRegister(collectors.NewGoCollector(), collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}),
		taken, throttled, m.commit, m.unknown, m.live)
	if replica != "" {
		m.reg.MustRegister(prometheus.NewGaugeFunc(prometheus.GaugeOpts{Name: "countersign_replica_info",
			Help: "The name of this replica, as its log lines carry it.", ConstLabels: prometheus.Labels{"replica": replica}},
			func() float64 { return 1 }))
	}
	return m
}

// observe is the operator's Options.Observe: each commit attempt as it ends.
func (m *botMetrics) observe(a operator.Attempt) {
	if !a.Interrupted { // another replica's attempt: how long it took is not known
		m.commit.Observe(a.Took.Seconds())
	}
	if a.Outcome == journal.Unknown {
		m.unknown.Inc()
	}
}

// follow has the metrics read o at each scrape from now on.
func (m *botMetrics) follow(o operatorView) { m.live.operator.Store(&o) }

// handler serves the registry in the Prometheus text format (or what the scraper
// asks for). A reading that fails leaves its metric out of that answer, which is
// still 200 with the rest (a scraper sees that series go stale, not all of
// them), and is logged.
func (m *botMetrics) handler(logger *slog.Logger) http.Handler {
	return getOnly(promhttp.HandlerFor(m.reg, promhttp.HandlerOpts{
		ErrorLog: scrapeLog{logger}, ErrorHandling: promhttp.ContinueOnError, Registry: m.reg}).ServeHTTP)
}

// scrapeLog is promhttp's error log, as warnings in the bot's log.
type scrapeLog struct{ logger *slog.Logger }

func (l scrapeLog) Println(v ...any) {
	l.logger.Warn("metrics: a scrape was incomplete", "err", fmt.Sprint(v...))
}

// operatorView is what the metrics read of the operator at each scrape.
type operatorView interface {
	Leading() (bool, <-chan struct{})
	ApprovalsNearExpiry(ctx context.Context) (int, error)
}

var _ operatorView = (*operator.Operator)(nil)

// scrapeTimeout bounds the journal's reads of one scrape.
const scrapeTimeout = 5 * time.Second

var (
	operationsDesc = prometheus.NewDesc("countersign_operations",
		"Operations in the journal by state, read at scrape time.", []string{"state"}, nil)
	nearExpiryDesc = prometheus.NewDesc("countersign_approvals_near_expiry",
		"Approvals nobody decided yet within their reminder's window before expiry (a quarter of their time to live, at most an hour), read at scrape time.", nil, nil)
	leaderDesc = prometheus.NewDesc("countersign_leader",
		"1 when this process is the leader (owns sending), else 0.", nil, nil)
)

// liveCollector reads the journal and the operator at each scrape: the
// operations by state, the approvals near their expiry and whether this process
// leads. What another replica changed in the journal shows at the next scrape
// of any replica. Before the operator runs this process does not lead, and the
// approvals near their expiry are not counted.
type liveCollector struct {
	journal  *journal.Journal
	operator atomic.Pointer[operatorView]
}

// Describe sends the descriptions of every metric Collect sends.
func (c *liveCollector) Describe(ch chan<- *prometheus.Desc) {
	ch <- operationsDesc
	ch <- nearExpiryDesc
	ch <- leaderDesc
}

// Collect reads the journal and the operator. A read that fails is sent as an
// invalid metric, which leaves that metric out of the scrape and the rest in.
func (c *liveCollector) Collect(ch chan<- prometheus.Metric) {
	ctx, cancel := context.WithTimeout(context.Background(), scrapeTimeout)
	defer cancel()
	if counts, err := c.journal.CountByState(ctx); err != nil {
		ch <- prometheus.NewInvalidMetric(operationsDesc, err)
	} else {
		for _, s := range journal.States() { // every state, so that none drops out at zero
			ch <- prometheus.MustNewConstMetric(operationsDesc, prometheus.GaugeValue, float64(counts[s]), string(s))
		}
	}
	p := c.operator.Load()
	if p == nil {
		ch <- prometheus.MustNewConstMetric(leaderDesc, prometheus.GaugeValue, 0)
		return
	}
	o := *p
	leading, _ := o.Leading()
	ch <- prometheus.MustNewConstMetric(leaderDesc, prometheus.GaugeValue, boolValue(leading))
	if n, err := o.ApprovalsNearExpiry(ctx); err != nil {
		ch <- prometheus.NewInvalidMetric(nearExpiryDesc, err)
	} else {
		ch <- prometheus.MustNewConstMetric(nearExpiryDesc, prometheus.GaugeValue, float64(n))
	}
}

func boolValue(b bool) float64 {
	if b {
		return 1
	}
	return 0
}

// routes are /healthz, /readyz and /metrics, served without the webhook's secret.
func (m *botMetrics) routes(j *journal.Journal, logger *slog.Logger) map[string]http.Handler {
	return map[string]http.Handler{
		"/healthz": getOnly(func(w http.ResponseWriter, _ *http.Request) { io.WriteString(w, "ok\n") }),
		"/readyz":  readyz(j, logger),
		"/metrics": m.handler(logger),
	}
}

// publicRoutes are the routes the webhook's public listener serves: all of them,
// or, when the metrics have a listener of their own (-metrics-listen), the
// health checks only, which a load balancer in front of the webhook asks and
// which tell nothing but whether the process and its journal answer.
func publicRoutes(all map[string]http.Handler, metricsApart bool) map[string]http.Handler {
	if !metricsApart {
		return all
	}
	public := maps.Clone(all)
	delete(public, "/metrics")
	return public
}

// readyWait is how long /readyz waits for the journal's answer.
const readyWait = time.Second

// readyz answers 200 when the journal answers a trivial query within readyWait,
// else 503 with a reason that names no database and holds no secret. The error
// itself is logged when the journal stops answering, and its return too.
func readyz(j *journal.Journal, logger *slog.Logger) http.Handler {
	var failing atomic.Bool
	return getOnly(func(w http.ResponseWriter, r *http.Request) {
		ctx, cancel := context.WithTimeout(r.Context(), readyWait)
		defer cancel()
		err := j.Ping(ctx)
		if err == nil {
			if failing.Swap(false) {
				logger.Info("ready: the journal answers again")
			}
			io.WriteString(w, "ok\n")
			return
		}
		reason := "the journal's query failed"
		if errors.Is(ctx.Err(), context.DeadlineExceeded) {
			reason = fmt.Sprintf("the journal did not answer within %s", readyWait)
		}
		if !failing.Swap(true) {
			logger.Warn("not ready: "+reason, "err", err)
		}
		http.Error(w, "not ready: "+reason, http.StatusServiceUnavailable)
	})
}

func getOnly(f http.HandlerFunc) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Method != http.MethodGet && r.Method != http.MethodHead {
			w.Header().Set("Allow", "GET, HEAD")
			http.Error(w, "method not allowed", http.StatusMethodNotAllowed)
			return
		}
		f(w, r)
	})
}

// listenMetrics serves routes on addr ("countersign run -metrics-listen ADDR") until ctx
// ends. It fails at start when it cannot listen.
func listenMetrics(ctx context.Context, addr string, routes map[string]http.Handler, logger *slog.Logger) error {
	mux := http.NewServeMux()
	for path, h := range routes {
		mux.Handle(path, h)
	}
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		return fmt.Errorf("metrics: %w", err)
	}
	srv := httpserve.Default.Server(mux, logger)
	go func() {
		<-ctx.Done()
		shut, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		srv.Shutdown(shut)
	}()
	logger.Info("health and metrics serving", "listen", ln.Addr().String())
	go func() {
		if err := srv.Serve(ln); !errors.Is(err, http.ErrServerClosed) {
			logger.Error("health and metrics server stopped", "err", err)
		}
	}()
	return nil
}
