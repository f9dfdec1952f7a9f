package main

import (
	"fmt"
	"io"
	"runtime"
	"slices"
	"strings"
	"time"
)

func numCPU() int { return runtime.NumCPU() }

// loadLine is the machine's load averages, as /proc/loadavg gives them.
func loadLine() string {
	l, err := loadAvg()
	if err != nil {
		return "unknown"
	}
	return fmt.Sprintf("%.2f", l)
}

func mib(b int64) string { return fmt.Sprintf("%.1f MiB", float64(b)/(1<<20)) }

func ms(d time.Duration) string { return fmt.Sprintf("%.1f ms", float64(d)/float64(time.Millisecond)) }

// Print writes each configuration's figures, then the cluster's against the
// single process's.
func (r *Report) Print(out io.Writer) {
	for _, f := range []*Figures{r.Cluster, r.Single} {
		f.Print(out)
	}
	c, s := r.Cluster, r.Single
	fmt.Fprintf(out, "\n== the cluster (%d replicas, PostgreSQL) against one process (SQLite), same mix, same run\n", c.Procs)
	row := func(what, cv, sv string, ratio float64) {
		fmt.Fprintf(out, "  %-34s %14s %14s %8.2f×\n", what, cv, sv, ratio)
	}
	fmt.Fprintf(out, "  %-34s %14s %14s %9s\n", "", "cluster", "single", "ratio")
	row("updates taken a second", fmt.Sprintf("%.2f", c.perSecond(c.Taken)), fmt.Sprintf("%.2f", s.perSecond(s.Taken)), c.perSecond(c.Taken)/s.perSecond(s.Taken))
	row("updates handled a second", fmt.Sprintf("%.2f", c.perSecond(c.Handled)), fmt.Sprintf("%.2f", s.perSecond(s.Handled)), c.perSecond(c.Handled)/s.perSecond(s.Handled))
	row("tap to send, p50", ms(c.TapP50), ms(s.TapP50), ratio(c.TapP50, s.TapP50))
	row("tap to send, p99", ms(c.TapP99), ms(s.TapP99), ratio(c.TapP99, s.TapP99))
	row("tap to send, max", ms(c.TapMax), ms(s.TapMax), ratio(c.TapMax, s.TapMax))
	row("the chat's own pacing, p99", ms(c.Breakdown.Pacing[1]), ms(s.Breakdown.Pacing[1]), ratio(c.Breakdown.Pacing[1], s.Breakdown.Pacing[1]))
	row("tap to send less pacing, p99", ms(c.Breakdown.Unpaced[1]), ms(s.Breakdown.Unpaced[1]), ratio(c.Breakdown.Unpaced[1], s.Breakdown.Unpaced[1]))
	row("tap to send less pacing, max", ms(c.Breakdown.Unpaced[2]), ms(s.Breakdown.Unpaced[2]), ratio(c.Breakdown.Unpaced[2], s.Breakdown.Unpaced[2]))
	cp, sp := sum(c.Mem, func(m ProcMem) int64 { return m.PeakRSS }), sum(s.Mem, func(m ProcMem) int64 { return m.PeakRSS })
	row("peak RSS, one process (mean)", mib(cp/int64(len(c.Mem))), mib(sp), float64(cp)/float64(len(c.Mem))/float64(sp))
	row("peak RSS, all processes", mib(cp), mib(sp), float64(cp)/float64(sp))
	cc, sc := sum(c.Mem, func(m ProcMem) int64 { return int64(m.CPU) }), sum(s.Mem, func(m ProcMem) int64 { return int64(m.CPU) })
	row("CPU time, all processes", time.Duration(cc).Round(10*time.Millisecond).String(), time.Duration(sc).Round(10*time.Millisecond).String(), float64(cc)/float64(sc))
	row("drain after the load", c.Drain.Round(10*time.Millisecond).String(), s.Drain.Round(10*time.Millisecond).String(), ratio(c.Drain, s.Drain))
	verdict := "PASS"
	if !r.OK() {
		verdict = "FAIL"
	}
	fmt.Fprintf(out, "%s  duplicates %d and %d, lost updates %d and %d (cluster and single)\n", verdict,
		len(c.Duplicates), len(s.Duplicates), len(c.Lost), len(s.Lost))
}

func ratio(a, b time.Duration) float64 {
	if b == 0 {
		return 0
	}
	return float64(a) / float64(b)
}

func sum(ms []ProcMem, f func(ProcMem) int64) int64 {
	var n int64
	for _, m := range ms {
		n += f(m)
	}
	return n
}

// Print writes one configuration's figures and its windows.
func (f *Figures) Print(out io.Writer) {
	fmt.Fprintf(out, "\n== %s: %d process(es), %s of load, then %s of drain\n", f.Name, f.Procs, f.Load.Round(time.Second), f.Drain.Round(10*time.Millisecond))
	kinds := make([]string, 0, len(f.ByKind))
	for k, v := range f.ByKind {
		kinds = append(kinds, fmt.Sprintf("%s %d", k, v))
	}
	slices.Sort(kinds)
	fmt.Fprintf(out, "  offered %d updates (%.2f/s): %s\n", f.Offered, f.perSecond(f.Offered), strings.Join(kinds, ", "))
	fmt.Fprintf(out, "  taken %d during the load (%.2f/s), handled %d (%.2f/s); %d taken in all\n",
		f.Taken, f.perSecond(f.Taken), f.Handled, f.perSecond(f.Handled), f.TakenAll)
	fmt.Fprintf(out, "  MCP: %d commits, %d committed, %d failed, %d calls\n", f.MCP.commits, f.MCP.committed, f.MCP.failed, f.MCP.calls)
	for _, e := range f.MCP.errors {
		fmt.Fprintf(out, "    %s\n", e)
	}
	fmt.Fprintf(out, "  tap to send (the tap's update leaving the fake server to the approved sendMessage reaching it): %d taps, p50 %s, p99 %s, max %s\n",
		f.Taps, ms(f.TapP50), ms(f.TapP99), ms(f.TapMax))
	fmt.Fprintf(out, "    %d over %s\n", len(f.SlowTaps), ms(slowTap))
	f.printBreakdown(out)
	fmt.Fprintf(out, "  messages sent %d, 429s %d; of them %d refusals to %d strangers (at most %d to one); the machine's 1-minute load average %.2f to %.2f\n",
		f.Sends, f.TooMany, f.Refusals, f.Refused, f.RefusedMost, f.LoadAvg[0], f.LoadAvg[1])
	for _, m := range f.Mem {
		fmt.Fprintf(out, "  %s: RSS peak %s (sampled peaks: anonymous %s, file-backed %s), at a fifth of the load %s, at the end %s; Go heap in use peak %s, end %s; goroutines %d then %d; CPU %s (%.0f%% of a core)\n",
			m.Name, mib(m.PeakRSS), mib(m.PeakAnon), mib(m.PeakFile), mib(m.WarmRSS), mib(m.EndRSS), mib(m.PeakHeap), mib(m.EndHeap), m.WarmGoroutines, m.EndGoroutines,
			m.CPU.Round(10*time.Millisecond), 100*m.CPU.Seconds()/(f.Load+f.Drain).Seconds())
	}
	fmt.Fprintf(out, "  %6s %8s %8s %8s %12s %9s\n", "window", "offered", "taken", "handled", "at Telegram", "in inbox")
	for _, w := range f.Windows {
		drain := ""
		if w.Drain {
			drain = "  (drain)"
		}
		fmt.Fprintf(out, "  %5.0fs %8d %8d %8d %12d %9d%s\n", w.End.Seconds(), w.Offered, w.Taken, w.Handled, w.AtTelegram, w.InInbox, drain)
	}
	fmt.Fprintf(out, "  duplicates: %d; lost updates: %d\n", len(f.Duplicates), len(f.Lost))
	for _, x := range first(f.Duplicates, 10) {
		fmt.Fprintf(out, "    duplicate: %s\n", x)
	}
	for _, x := range first(f.Lost, 10) {
		fmt.Fprintf(out, "    lost: %s\n", x)
	}
}
