package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"sync/atomic"
	"time"

	"github.com/countersign/countersign/internal/httpserve"
	"github.com/countersign/countersign/internal/metrics"
	"github.com/countersign/countersign/journal"
	"github.com/countersign/countersign/operator"
	"github.com/countersign/countersign/telegram"
)

// botMetrics are what a bot run process exports at /metrics (README: Health and
// metrics). The counts are this process's own since it started; the operations
// by state are the journal's, read at each scrape.
type botMetrics struct {
	reg      *metrics.Registry
	counters telegram.Counters
	commit   *metrics.Histogram
	unknown  *metrics.Counter
	// leader is 1 while this process owns sending.
	leader *metrics.Gauge
}

// commitBuckets are the upper bounds of commit_seconds: a send to the Bot API
// takes tens to hundreds of milliseconds; the last bounds catch its 30 s timeout.
var commitBuckets = []float64{0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60}

func newBotMetrics(j *journal.Journal, replica string) *botMetrics {
	reg := metrics.New()
	m := &botMetrics{reg: reg,
		counters: telegram.Counters{
			UpdatesTaken:    reg.Counter("countersign_updates_taken_total", "Updates this process stored fresh in the inbox."),
			TooManyRequests: reg.Counter("countersign_telegram_429_total", "429 Too Many Requests answers from the Bot API seen by this process."),
		},
		commit:  reg.Histogram("countersign_commit_seconds", "Commit attempts made by this process: seconds from the move to committing to the outcome.", commitBuckets),
		unknown: reg.Counter("countersign_unknown_total", "Operations this process moved to unknown (outcome to be verified by a person)."),
		leader:  reg.Gauge("countersign_leader", "1 when this process is the leader (owns sending), else 0."),
	}
	reg.GaugeFunc("countersign_operations", "Operations in the journal by state, read at scrape time.", func(ctx context.Context) ([]metrics.Sample, error) {
		counts, err := j.CountByState(ctx)
		if err != nil {
			return nil, err
		}
		var samples []metrics.Sample
		for _, s := range journal.States() { // every state, so that none drops out at zero
			samples = append(samples, metrics.Sample{Labels: []metrics.Label{{Name: "state", Value: string(s)}}, Value: float64(counts[s])})
		}
		return samples, nil
	})
	if replica != "" {
		reg.Gauge("countersign_replica_info", "The name of this replica, as its log lines carry it.", metrics.Label{Name: "replica", Value: replica}).Set(1)
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

// routes are /healthz, /readyz and /metrics, served without the webhook's secret.
func (m *botMetrics) routes(j *journal.Journal, logger *slog.Logger) map[string]http.Handler {
	return map[string]http.Handler{
		"/healthz": getOnly(func(w http.ResponseWriter, _ *http.Request) { io.WriteString(w, "ok\n") }),
		"/readyz":  readyz(j, logger),
		"/metrics": m.reg.Handler(func(err error) { logger.Warn("metrics: a gauge could not be read", "err", err) }),
	}
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

// listenMetrics serves routes on addr ("bot run -metrics-listen ADDR") until ctx
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
