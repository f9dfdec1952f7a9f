package main

import (
	"bufio"
	"bytes"
	"context"
	"database/sql"
	"fmt"
	"net/http"
	"os"
	"strconv"
	"strings"
	"sync"
	"time"

	_ "github.com/mattn/go-sqlite3" // the SQLite process's inbox, read beside it and after

	"github.com/countersign/countersign/telegram/telegramtest"
)

// ProcMem is one process's memory and CPU over a configuration's run.
type ProcMem struct {
	Name string
	// PeakRSS is VmHWM at the end of the drain; EndRSS is VmRSS then; WarmRSS is
	// VmRSS at the first sample past a fifth of the load, against which EndRSS
	// shows growth.
	PeakRSS, EndRSS, WarmRSS int64
	// PeakAnon and PeakFile are the highest RssAnon and RssFile sampled: the
	// process's own memory (Go heap, C heap, stacks) and the pages of the binary
	// and libraries it has mapped, which VmHWM adds up.
	PeakAnon, PeakFile int64
	// PeakHeap and EndHeap are go_memstats_heap_inuse_bytes from /metrics, the
	// highest scraped and the last.
	PeakHeap, EndHeap int64
	// WarmGoroutines and EndGoroutines are go_goroutines at the same points.
	WarmGoroutines, EndGoroutines int64
	// CPU is the user and system time the process used, in all.
	CPU time.Duration
}

// sampler reads each process's memory every 2 s and its /metrics every 10 s.
type sampler struct {
	procs []*proc
	warm  time.Time // samples from here on may set the warm figures
	mu    sync.Mutex
	mem   map[string]*ProcMem
	loads []float64 // the machine's 1-minute load average, every 10 s
}

func newSampler(procs []*proc, warm time.Time) *sampler {
	s := &sampler{procs: procs, warm: warm, mem: map[string]*ProcMem{}}
	for _, p := range procs {
		s.mem[p.name] = &ProcMem{Name: p.name}
	}
	return s
}

// run samples until ctx ends.
func (s *sampler) run(ctx context.Context) {
	tick := time.NewTicker(2 * time.Second)
	defer tick.Stop()
	for i := 0; ; i++ {
		s.sample(i%5 == 0)
		select {
		case <-ctx.Done():
			return
		case <-tick.C:
		}
	}
}

// sample takes one reading of every process, with its /metrics when scrape is set.
func (s *sampler) sample(scrape bool) {
	warm := !time.Now().Before(s.warm)
	for _, p := range s.procs {
		st, err := procStatus(p.cmd.Process.Pid)
		var heap, gr int64
		if scrape {
			heap, gr = metrics(p.metrics)
		}
		s.mu.Lock()
		m := s.mem[p.name]
		if err == nil {
			m.PeakRSS, m.EndRSS = max(m.PeakRSS, st["VmHWM"]), st["VmRSS"]
			m.PeakAnon, m.PeakFile = max(m.PeakAnon, st["RssAnon"]), max(m.PeakFile, st["RssFile"])
			if warm && m.WarmRSS == 0 {
				m.WarmRSS = st["VmRSS"]
			}
		}
		if heap > 0 {
			m.PeakHeap, m.EndHeap, m.EndGoroutines = max(m.PeakHeap, heap), heap, gr
			if warm && m.WarmGoroutines == 0 {
				m.WarmGoroutines = gr
			}
		}
		if cpu, err := procCPU(p.cmd.Process.Pid); err == nil {
			m.CPU = cpu
		}
		s.mu.Unlock()
	}
	if scrape {
		if l, err := loadAvg(); err == nil {
			s.mu.Lock()
			s.loads = append(s.loads, l)
			s.mu.Unlock()
		}
	}
}

// figures are the processes' figures, in the processes' order.
func (s *sampler) figures() []ProcMem {
	s.mu.Lock()
	defer s.mu.Unlock()
	out := make([]ProcMem, 0, len(s.procs))
	for _, p := range s.procs {
		out = append(out, *s.mem[p.name])
	}
	return out
}

// procStatus reads the kB fields of /proc/PID/status, in bytes.
func procStatus(pid int) (map[string]int64, error) {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", pid))
	if err != nil {
		return nil, err
	}
	out := map[string]int64{}
	sc := bufio.NewScanner(bytes.NewReader(b))
	for sc.Scan() {
		k, v, ok := strings.Cut(sc.Text(), ":")
		f := strings.Fields(v)
		if !ok || len(f) != 2 || f[1] != "kB" {
			continue
		}
		if n, err := strconv.ParseInt(f[0], 10, 64); err == nil {
			out[k] = n << 10
		}
	}
	return out, nil
}

// procCPU is the user and system time of process pid, from /proc/PID/stat
// (in clock ticks of 1/100 s, as on every Linux this runs on).
func procCPU(pid int) (time.Duration, error) {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return 0, err
	}
	i := bytes.LastIndexByte(b, ')') // the command's name may hold spaces
	f := strings.Fields(string(b[i+1:]))
	if len(f) < 13 {
		return 0, fmt.Errorf("/proc/%d/stat: %d fields", pid, len(f))
	}
	utime, err1 := strconv.ParseInt(f[11], 10, 64)
	stime, err2 := strconv.ParseInt(f[12], 10, 64)
	if err1 != nil || err2 != nil {
		return 0, fmt.Errorf("/proc/%d/stat: times not numbers", pid)
	}
	return time.Duration(utime+stime) * 10 * time.Millisecond, nil
}

func loadAvg() (float64, error) {
	b, err := os.ReadFile("/proc/loadavg")
	if err != nil {
		return 0, err
	}
	f := strings.Fields(string(b))
	if len(f) == 0 {
		return 0, fmt.Errorf("/proc/loadavg is empty")
	}
	return strconv.ParseFloat(f[0], 64)
}

// metrics scrapes the Go heap in use and the goroutines from a process's
// /metrics; 0, 0 when it does not answer.
func metrics(addr string) (heap, goroutines int64) {
	c := &http.Client{Timeout: 2 * time.Second}
	resp, err := c.Get("http://" + addr + "/metrics")
	if err != nil {
		return 0, 0
	}
	defer resp.Body.Close()
	sc := bufio.NewScanner(resp.Body)
	sc.Buffer(make([]byte, 64<<10), 1<<20)
	for sc.Scan() {
		name, v, ok := strings.Cut(sc.Text(), " ")
		if !ok {
			continue
		}
		f, err := strconv.ParseFloat(strings.TrimSpace(v), 64)
		if err != nil {
			continue
		}
		switch name {
		case "go_memstats_heap_inuse_bytes":
			heap = int64(f)
		case "go_goroutines":
			goroutines = int64(f)
		}
	}
	return heap, goroutines
}

// inboxRow is one update in a journal's inbox.
type inboxRow struct {
	updateID          int64
	received, handled time.Time // handled is zero while it is not
}

// inbox reads a journal's inbox: dsn is a PostgreSQL URL (with the run's
// search_path), or a SQLite file, opened read-only beside its process.
func inbox(ctx context.Context, dsn string) ([]inboxRow, error) {
	driver, name := "pgx", dsn
	if !strings.HasPrefix(dsn, "postgres") {
		driver, name = "sqlite3", "file:"+dsn+"?mode=ro&_busy_timeout=5000"
	}
	db, err := sql.Open(driver, name)
	if err != nil {
		return nil, fmt.Errorf("open the inbox: %w", err)
	}
	defer db.Close()
	rows, err := db.QueryContext(ctx, `SELECT update_id, received_at, handled_at FROM inbox`)
	if err != nil {
		return nil, fmt.Errorf("read the inbox: %w", err)
	}
	defer rows.Close()
	var out []inboxRow
	for rows.Next() {
		var id, rec, hand int64
		if err := rows.Scan(&id, &rec, &hand); err != nil {
			return nil, fmt.Errorf("read the inbox: %w", err)
		}
		r := inboxRow{updateID: id, received: time.UnixMilli(rec)}
		if hand != 0 {
			r.handled = time.UnixMilli(hand)
		}
		out = append(out, r)
	}
	return out, rows.Err()
}

// unhandled counts the inbox's rows not handled yet.
func unhandled(rows []inboxRow) int {
	n := 0
	for _, r := range rows {
		if r.handled.IsZero() {
			n++
		}
	}
	return n
}

// taken is when each update was first taken by the bot (a delivery answered
// 2xx), by the fake server's clock, from its record of webhook deliveries.
func taken(srv *telegramtest.Server) map[int64]time.Time {
	out := map[int64]time.Time{}
	for _, d := range srv.WebhookDeliveries() {
		if _, ok := out[d.UpdateID]; !ok && d.Err == "" {
			out[d.UpdateID] = d.Time
		}
	}
	return out
}

// Window is one 10 s span of a configuration's run.
type Window struct {
	End                     time.Duration // from the load's start
	Offered, Taken, Handled int           // in the span
	// Waiting is the backlog at the span's end: updates offered and not yet
	// taken (at Telegram), and taken and not yet handled (in the inbox).
	AtTelegram, InInbox int
	Drain               bool // past the load: the drain
}

const windowSpan = 10 * time.Second

// windows cuts [start, end) into 10 s spans and counts each.
func windows(start, loadEnd, end time.Time, offered, took map[int64]time.Time, rows []inboxRow) []Window {
	var out []Window
	in := func(t, from, to time.Time) bool { return !t.IsZero() && !t.Before(from) && t.Before(to) }
	for from := start; from.Before(end); from = from.Add(windowSpan) {
		to := from.Add(windowSpan)
		w := Window{End: to.Sub(start), Drain: !from.Before(loadEnd)}
		for id, t := range offered {
			if in(t, from, to) {
				w.Offered++
			}
			if t.Before(to) {
				if tk, ok := took[id]; !ok || !tk.Before(to) {
					w.AtTelegram++
				}
			}
		}
		for _, t := range took {
			if in(t, from, to) {
				w.Taken++
			}
		}
		for _, r := range rows {
			if in(r.handled, from, to) {
				w.Handled++
			}
			if r.received.Before(to) && (r.handled.IsZero() || !r.handled.Before(to)) {
				w.InInbox++
			}
		}
		out = append(out, w)
	}
	return out
}
