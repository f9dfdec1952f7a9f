package main

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/countersign/countersign/internal/botbuild"
	"github.com/countersign/countersign/internal/cmd/quantile"

	"github.com/countersign/countersign/internal/pgschema"
	"github.com/countersign/countersign/journal"
	"github.com/countersign/countersign/telegram/telegramtest"
)

// Config is one loadbench run: both configurations under the same mix.
type Config struct {
	Duration time.Duration // each configuration's load; the drain comes after
	Rate     float64       // updates a second offered, taps not included
	Sends    float64       // of them, /send commands a second, each tapped
	MCP      float64       // MCP commits a second
	Replicas int           // the cluster's replicas
	Seed     int64
	Journal  string // the cluster's PostgreSQL server
	Policies string
	Bot      string // "" builds ./cmd/bot
	Verbose  bool
}

func (c Config) validate() error {
	switch {
	case c.Duration <= 0:
		return errors.New("-duration must be positive")
	case c.Rate <= 0 || c.Sends < 0 || c.MCP < 0:
		return errors.New("-rate must be positive, -sends and -mcp not negative")
	case c.Sends > c.Rate:
		return errors.New("-sends is a part of -rate: it cannot be larger")
	case c.Replicas < 1:
		return errors.New("-replicas must be at least 1")
	case !journal.IsPostgres(c.Journal):
		return fmt.Errorf("-journal: want a postgres:// URL, got %q", journal.Where(c.Journal))
	}
	return nil
}

// Report is both configurations' figures.
type Report struct {
	Cluster, Single *Figures
}

// OK reports whether neither configuration delivered a message twice or lost an
// update.
func (r *Report) OK() bool {
	for _, f := range []*Figures{r.Cluster, r.Single} {
		if f == nil || !f.OK() {
			return false
		}
	}
	return true
}

// Figures are one configuration's measures.
type Figures struct {
	Name     string
	Procs    int
	Load     time.Duration // the load phase
	Drain    time.Duration // from the load's end until everything offered was handled and delivered
	Offered  int
	ByKind   map[string]int
	Taken    int // updates the bot took (a delivery answered 2xx) during the load
	Handled  int // updates the bot handled during the load
	TakenAll int // updates taken in all, the drain included
	// Taps are the taps timed, from the update leaving the fake server to the
	// approved message reaching it.
	Taps int
	// SlowTaps are the taps over slowTap, in the order they left, each cut
	// into its stages where the bot traced it.
	SlowTaps               []TapBreakdown
	TapP50, TapP99, TapMax time.Duration
	// Breakdown is where the taps' time went, stage by stage.
	Breakdown Breakdown
	Mem       []ProcMem
	TooMany   int // 429 answers of the fake server
	Sends     int // messages the bot sent (sendMessage answered 200)
	// Refusals are the messages to strangers, RefusedMost the most one stranger
	// got: the bot tells a stranger once an hour.
	Refusals, Refused, RefusedMost int
	Windows                        []Window
	LoadAvg                        [2]float64 // the machine's 1-minute load average, lowest and highest seen
	MCP                            mcpFigures
	// Duplicates are messages delivered twice; Lost are updates the bot took
	// and never handled, and commands whose effect never came.
	Duplicates, Lost []string
}

// OK reports whether nothing was delivered twice and nothing lost.
func (f *Figures) OK() bool { return len(f.Duplicates) == 0 && len(f.Lost) == 0 }

func (f *Figures) perSecond(n int) float64 { return float64(n) / f.Load.Seconds() }

// Run builds the bot (unless cfg.Bot names one), runs the cluster on PostgreSQL,
// then the single process on SQLite, under the same mix, and prints both and
// their ratios to out. The error is for a run that could not be made; a
// duplicate or a lost update is in the report.
func Run(ctx context.Context, cfg Config, out io.Writer) (*Report, error) {
	if err := cfg.validate(); err != nil {
		return nil, err
	}
	src, err := os.ReadFile(cfg.Policies)
	if err != nil {
		return nil, err
	}
	pol, err := policy(string(src))
	if err != nil {
		return nil, fmt.Errorf("%s: %w", cfg.Policies, err)
	}
	root, err := os.MkdirTemp("", "countersign-loadbench-")
	if err != nil {
		return nil, err
	}
	defer os.RemoveAll(root)
	if err := os.WriteFile(filepath.Join(root, "policies.yaml"), []byte(pol), 0o600); err != nil {
		return nil, err
	}
	// The bot runs from a fresh copy read from the disk, as installed: the
	// linker's own output would count its cached pages in the peak RSS.
	if cfg.Bot == "" {
		cfg.Bot, err = botbuild.Build(root)
	} else {
		cfg.Bot, err = botbuild.Install(cfg.Bot, root)
	}
	if err != nil {
		return nil, err
	}
	fmt.Fprintf(out, "loadbench: seed %d, %s of load per configuration: %.1f updates/s offered (%.2f /send/s, each tapped), %.2f MCP commits/s; %d CPUs; load average at the start %s\n",
		cfg.Seed, cfg.Duration, cfg.Rate, cfg.Sends, cfg.MCP, numCPU(), loadLine())
	rep := &Report{}
	if rep.Cluster, err = runOne(ctx, cfg, root, "cluster", cfg.Replicas, out); err != nil {
		return nil, fmt.Errorf("the cluster: %w", err)
	}
	if rep.Single, err = runOne(ctx, cfg, root, "single", 1, out); err != nil {
		return nil, fmt.Errorf("the single process: %w", err)
	}
	rep.Print(out)
	return rep, nil
}

// runOne runs one configuration: n replicas on a fresh PostgreSQL schema when
// name is "cluster", else one process on SQLite.
func runOne(ctx context.Context, cfg Config, root, name string, n int, out io.Writer) (*Figures, error) {
	dir := filepath.Join(root, name)
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return nil, err
	}
	var pg, inboxAt string
	if name == "cluster" {
		var schema string
		var err error
		if pg, schema, err = pgschema.Fresh(ctx, cfg.Journal, "loadbench_"); err != nil {
			return nil, err
		}
		defer func() {
			if err := pgschema.Drop(cfg.Journal, schema); err != nil {
				fmt.Fprintf(out, "loadbench: drop schema %s: %v\n", schema, err)
			}
		}()
		inboxAt = pg
	}
	srv := telegramtest.New(telegramtest.Options{Token: token, Flood: &telegramtest.FloodLimits{}})
	defer srv.Close()
	var procs []*proc
	for i := range n {
		p, err := newProc(dir, fmt.Sprintf("r%d", i+1))
		if err != nil {
			return nil, err
		}
		defer p.log.Close()
		procs = append(procs, p)
	}
	if pg == "" {
		inboxAt = filepath.Join(procs[0].data, "journal.db")
	}
	stopAll := func() error {
		var errs []error
		var mu sync.Mutex
		var wg sync.WaitGroup
		for _, p := range procs {
			wg.Go(func() {
				if err := p.stop(); err != nil {
					mu.Lock()
					errs = append(errs, err)
					mu.Unlock()
				}
			})
		}
		wg.Wait()
		return errors.Join(errs...)
	}
	defer stopAll()
	ops, apps := people(firstOperator, operators), people(firstApprover, approvers)
	for _, p := range procs {
		// One after the other: the first applies the journal's migrations.
		if err := p.start(cfg.Bot, filepath.Join(root, "policies.yaml"), srv, pg, filepath.Join(dir, "vault"), ops, apps); err != nil {
			return nil, err
		}
		if err := p.ready(90 * time.Second); err != nil {
			return nil, err
		}
	}
	if err := srv.WaitTimeout(30*time.Second, func(s *telegramtest.Server) bool { return s.Webhook().URL != "" }); err != nil {
		return nil, fmt.Errorf("no process set the webhook: %w", err)
	}
	delivering, stopDelivery := context.WithCancel(context.Background())
	defer stopDelivery()
	go srv.DeliverWebhook(delivering, newBalancer(cfg.Seed, procs).deliver)
	var callers []*caller
	for _, p := range procs {
		callers = append(callers, &caller{endpoint: "http://" + p.mcp + "/mcp"})
	}
	if len(callers) == 1 { // as many callers as the cluster has, on the one process
		callers = append(callers, &caller{endpoint: callers[0].endpoint}, &caller{endpoint: callers[0].endpoint})
	}
	defer func() {
		for _, c := range callers {
			c.close()
		}
	}()

	what := fmt.Sprintf("%d replicas on PostgreSQL (%s)", n, journal.Where(cfg.Journal))
	if pg == "" {
		what = "one process on SQLite"
	}
	fmt.Fprintf(out, "\n== %s: %s, updates by webhook through the fake server's delivery\n", name, what)
	l := newLoad(cfg, name, srv, procs)
	start := time.Now()
	smp := newSampler(procs, start.Add(cfg.Duration/5))
	sampling, stopSampling := context.WithCancel(context.Background())
	var sampled sync.WaitGroup
	sampled.Go(func() { smp.run(sampling) })
	defer stopSampling()
	loading, stopLoad := context.WithTimeout(ctx, cfg.Duration)
	var progress sync.WaitGroup
	if cfg.Verbose {
		progress.Go(func() { l.progress(loading, out, start) })
	}
	l.run(loading, callers)
	stopLoad()
	progress.Wait()
	loadEnd := time.Now()
	drainErr := l.drain(ctx, inboxAt, 3*time.Minute)
	drained := time.Now()
	stopSampling()
	sampled.Wait()
	smp.sample(true) // the end figures, with the processes still up
	if err := stopAll(); err != nil {
		fmt.Fprintf(out, "loadbench: %s: stop: %v\n", name, err)
	}
	stopDelivery()
	rows, err := inbox(context.Background(), inboxAt)
	if err != nil {
		return nil, err
	}
	traces, err := tracesOf(procs)
	if err != nil {
		return nil, err
	}
	f := l.figures(start, loadEnd, drained, rows, traces)
	f.Name, f.Procs, f.Mem = name, n, smp.figures()
	f.LoadAvg = minMax(smp.loads)
	if drainErr != nil {
		f.Lost = append(f.Lost, "the drain did not end: "+drainErr.Error())
	}
	if !f.OK() { // the processes' own words on what went wrong
		for _, p := range procs {
			fmt.Fprintf(out, "--- %s's log%s\n", p.name, logTail(p.log))
		}
	}
	return f, nil
}

// drain waits, after the load, until every update offered was taken and
// handled, every approval tapped, every expected message delivered and every
// MCP caller has its outcome; or until d passes.
func (l *load) drain(ctx context.Context, inboxAt string, d time.Duration) error {
	deadline := time.Now().Add(d)
	err := l.srv.WaitTimeout(d, func(s *telegramtest.Server) bool {
		l.tapCards() // the last cards come during the drain
		return len(s.PendingUpdates()) == 0 && len(l.missing(s)) == 0
	})
	if err != nil {
		return fmt.Errorf("%w; still waiting: %d updates at Telegram, effects missing: %s", err, len(l.srv.PendingUpdates()), strings.Join(first(l.missing(l.srv), 5), "; "))
	}
	done := make(chan struct{})
	go func() { l.mcpJobs.Wait(); close(done) }()
	select {
	case <-done:
	case <-time.After(time.Until(deadline)):
		return errors.New("MCP callers still following their commits")
	}
	for {
		rows, err := inbox(ctx, inboxAt)
		if err == nil && unhandled(rows) == 0 {
			return nil
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("the inbox holds updates not handled (%v)", err)
		}
		time.Sleep(100 * time.Millisecond) // a database, not the fake server: it is asked again
	}
}

// missing are the effects the run expects and Telegram does not hold yet: an
// approved or auto-approved message not delivered, a /whoami not answered.
func (l *load) missing(s *telegramtest.Server) []string {
	l.mu.Lock()
	sends := make([]*sent, 0, len(l.sends))
	for _, x := range l.sends {
		sends = append(sends, x)
	}
	asked := map[int64]int{}
	for k, v := range l.whoami {
		asked[k] = v
	}
	l.mu.Unlock()
	var out []string
	for _, x := range sends {
		if !delivered(s.Messages(x.target), x.text) {
			out = append(out, fmt.Sprintf("%q not delivered to %d", x.text, x.target))
		}
	}
	for chat, n := range asked {
		if got := whoamiReplies(s.Messages(chat)); got < n {
			out = append(out, fmt.Sprintf("chat %d: %d /whoami answered of %d", chat, got, n))
		}
	}
	return out
}

func delivered(ms []telegramtest.Message, text string) bool {
	for _, m := range ms {
		if m.Text == text {
			return true
		}
	}
	return false
}

func whoamiReplies(ms []telegramtest.Message) int {
	n := 0
	for _, m := range ms {
		if strings.HasPrefix(m.Text, "Your user id is ") {
			n++
		}
	}
	return n
}

func first(xs []string, n int) []string { return xs[:min(n, len(xs))] }

// figures computes a configuration's figures from what the fake server recorded,
// the journal's inbox and the taps' traces (by callback query id).
func (l *load) figures(start, loadEnd, end time.Time, rows []inboxRow, traces map[string]tapTrace) *Figures {
	f := &Figures{Load: loadEnd.Sub(start), Drain: end.Sub(loadEnd), ByKind: map[string]int{}, TooMany: l.srv.TooManyRequests()}
	l.mu.Lock()
	offered := make(map[int64]time.Time, len(l.offered))
	for id, t := range l.offered {
		offered[id] = t
	}
	for k, v := range l.kinds {
		f.ByKind[k] = v
	}
	sends := make([]sent, 0, len(l.sends))
	for _, s := range l.sends {
		sends = append(sends, *s)
	}
	asked := map[int64]int{}
	for k, v := range l.whoami {
		asked[k] = v
	}
	f.MCP = l.mcp
	l.mu.Unlock()
	f.Offered = len(offered)
	took := taken(l.srv)
	f.TakenAll = len(took)
	for _, t := range took {
		if t.Before(loadEnd) {
			f.Taken++
		}
	}
	handled := map[int64]bool{}
	for _, r := range rows {
		if !r.handled.IsZero() {
			handled[r.updateID] = true
			if r.handled.Before(loadEnd) {
				f.Handled++
			}
		}
	}
	f.Windows = windows(start, loadEnd, end, offered, took, rows)

	// Lost: taken and not handled; offered and never taken; an effect missing.
	for id := range offered {
		switch _, ok := took[id]; {
		case !ok:
			f.Lost = append(f.Lost, fmt.Sprintf("update %d: offered, never taken", id))
		case !handled[id]:
			f.Lost = append(f.Lost, fmt.Sprintf("update %d: taken, never handled", id))
		}
	}
	f.Lost = append(f.Lost, l.missing(l.srv)...)

	// Duplicates, and the tap latencies, from the sends as the server took them.
	arrived := map[[2]string]int{}
	at := map[[2]string]time.Time{}
	for _, c := range l.srv.CallsTo("sendMessage") {
		if c.Status != 200 {
			continue
		}
		f.Sends++
		k := [2]string{fmt.Sprint(c.ChatID), c.Params["text"]}
		if d := apData.FindString(c.Params["reply_markup"]); d != "" {
			k[1] = "card " + d // a card shown twice in one chat is a message delivered twice
		} else if !marker.MatchString(k[1]) {
			continue
		}
		if arrived[k]++; arrived[k] == 1 {
			at[k] = c.Time
		}
	}
	for k, n := range arrived {
		if n > 1 {
			f.Duplicates = append(f.Duplicates, fmt.Sprintf("%q delivered %d times to chat %s", k[1], n, k[0]))
		}
	}
	for chat, n := range asked {
		if got := whoamiReplies(l.srv.Messages(chat)); got > n {
			f.Duplicates = append(f.Duplicates, fmt.Sprintf("chat %d: %d answers to %d /whoami", chat, got, n))
		}
	}
	told := map[int64]int{}
	for _, m := range l.srv.AllMessages() {
		if m.Chat.ID >= firstStranger && m.Chat.ID < firstStranger+strangers {
			told[m.Chat.ID]++
		}
	}
	for _, n := range told {
		f.Refusals, f.RefusedMost = f.Refusals+n, max(f.RefusedMost, n)
	}
	f.Refused = len(told)
	var lat []time.Duration
	var taps []TapBreakdown
	for _, s := range sends {
		if !s.tapped || s.tap == 0 {
			continue
		}
		left, ok1 := took[s.tap]
		got, ok2 := at[[2]string{fmt.Sprint(s.target), s.text}]
		if ok1 && ok2 {
			tr, traced := traces[s.query]
			b := breakdown(left, got, tr, traced)
			b.Left, b.Queued = left.Sub(start), left.Sub(offered[s.tap])
			lat, taps = append(lat, b.Total), append(taps, b)
			if b.Total > slowTap {
				f.SlowTaps = append(f.SlowTaps, b)
			}
		}
	}
	slices.SortFunc(f.SlowTaps, func(a, b TapBreakdown) int { return cmp.Compare(a.Left, b.Left) })
	f.Breakdown = summarize(taps)
	f.Taps = len(lat)
	f.TapP50, f.TapP99, f.TapMax = quantile.Of(lat, 0.5), quantile.Of(lat, 0.99), quantile.Of(lat, 1)
	return f
}

// slowTap is the tap-to-send time past which a tap is listed.
const slowTap = 250 * time.Millisecond

// progress prints each 10 s window's offered and taken counts as it passes.
func (l *load) progress(ctx context.Context, out io.Writer, start time.Time) {
	tick := time.NewTicker(windowSpan)
	defer tick.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-tick.C:
		}
		took := taken(l.srv)
		l.mu.Lock()
		offered := len(l.offered)
		l.mu.Unlock()
		fmt.Fprintf(out, "  %4.0fs  offered %d, taken %d, at Telegram %d\n", time.Since(start).Seconds(), offered, len(took), len(l.srv.PendingUpdates()))
	}
}

func minMax(xs []float64) [2]float64 {
	if len(xs) == 0 {
		return [2]float64{}
	}
	lo, hi := xs[0], xs[0]
	for _, x := range xs {
		lo, hi = min(lo, x), max(hi, x)
	}
	return [2]float64{lo, hi}
}
