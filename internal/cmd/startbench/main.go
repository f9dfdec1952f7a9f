// Command startbench measures how the bot starts on a big journal: it builds one
// with 100,000 operations of which 10,000 wait for approval (their cards already
// sent) and 1,000 have an unknown outcome (their envelopes in the vault), starts the real `countersign run` binary against it and the fake Bot API server
// (run here, in process), and reports the time from exec to the first getUpdates
// request (the bot taking updates) and the peak RSS (VmHWM) once it polls, beside
// the same start on an empty journal, measured in the same run; each journal is
// started -runs times, alternately, and the worst start is judged.
//
//	go run ./internal/cmd/startbench
//
// Goals: taking updates within 1 s, peak RSS within 64 MiB. It prints a PASS or
// FAIL line for each and exits 1 when one fails.
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/countersign/countersign/internal/botbuild"
	"github.com/countersign/countersign/policy"
	"github.com/countersign/countersign/telegram/telegramtest"
)

const token = "7001234567:AAHdqTcvCH1vGWJxfSeofSAs0K5PALDsaw"

// Goals of a start on the big journal.
const (
	startGoal = time.Second
	rssGoal   = 64 << 20
)

type config struct {
	ops, pending, runs int
	unknown            int
	policies, bot      string
	keep               bool
}

func main() {
	var c config
	flag.IntVar(&c.ops, "ops", 100_000, "operations in the journal")
	flag.IntVar(&c.pending, "pending", 10_000, "of them, awaiting approval with their cards sent")
	flag.IntVar(&c.unknown, "unknown", 1_000, "of them, outcomes unknown with their envelopes in the vault")
	flag.IntVar(&c.runs, "runs", 5, "starts of each journal; the worst is judged")
	flag.StringVar(&c.policies, "policies", "policies.yaml", "the policy file the bot runs with")
	flag.StringVar(&c.bot, "bot", "", "a built bot binary (default: build ./cmd/bot)")
	flag.BoolVar(&c.keep, "keep", false, "keep the journals and print where they are")
	flag.Parse()
	ok, err := run(context.Background(), c, os.Stdout)
	if err != nil {
		fmt.Fprintln(os.Stderr, "startbench:", err)
		os.Exit(2)
	}
	if !ok {
		os.Exit(1)
	}
}

// start is what one start of the bot measured.
type start struct {
	toUpdates time.Duration // exec to the first getUpdates
	peakRSS   int64         // VmHWM once it polls, in bytes
}

func run(ctx context.Context, c config, out io.Writer) (bool, error) {
	root, err := os.MkdirTemp("", "countersign-startbench-")
	if err != nil {
		return false, err
	}
	if c.keep {
		fmt.Fprintln(out, "startbench: journals in", root)
	} else {
		defer os.RemoveAll(root)
	}
	// The bot runs from a fresh copy read from the disk, as installed: the
	// linker's own output would count its cached pages in the peak RSS.
	if c.bot == "" {
		c.bot, err = botbuild.Build(root)
	} else {
		c.bot, err = botbuild.Install(c.bot, root)
	}
	if err != nil {
		return false, err
	}
	pol, err := policy.Load(c.policies)
	if err != nil {
		return false, err
	}
	f := fixture{ops: c.ops, pending: c.pending, unknown: c.unknown, operator: 1, approvers: []int64{1, 2}, ttl: pol.ApprovalTTL}
	empty, loaded := filepath.Join(root, "empty"), filepath.Join(root, "loaded")
	for _, d := range []string{empty, loaded} {
		if err := os.MkdirAll(d, 0o700); err != nil {
			return false, err
		}
	}
	began := time.Now()
	if err := build(ctx, loaded, f, pol); err != nil {
		return false, fmt.Errorf("build the journal: %w", err)
	}
	fi, err := os.Stat(filepath.Join(loaded, "journal.db"))
	if err != nil {
		return false, err
	}
	fmt.Fprintf(out, "startbench: journal of %d operations (%d awaiting approval, cards sent to %d approvers; %d unknown, envelopes in the vault) built in %s, %.0f MiB\n",
		c.ops, c.pending, len(f.approvers), c.unknown, time.Since(began).Round(time.Millisecond), float64(fi.Size())/(1<<20))
	var base, big []start
	for i := range c.runs {
		for _, s := range []struct {
			dir  string
			into *[]start
		}{{empty, &base}, {loaded, &big}} {
			got, err := startOnce(c, s.dir)
			if err != nil {
				return false, fmt.Errorf("start %d on %s: %w", i+1, filepath.Base(s.dir), err)
			}
			*s.into = append(*s.into, got)
		}
	}
	return report(out, base, big), nil
}

// startOnce starts `countersign run` on the data folder dir against a fresh fake server,
// and measures the time to its first getUpdates and its peak RSS after it has
// polled a few times (the start-up sweep runs beside the first polls).
func startOnce(c config, dir string) (start, error) {
	srv := telegramtest.New(telegramtest.Options{Token: token})
	defer srv.Close()
	var log strings.Builder
	cmd := exec.Command(c.bot, "run", "-data", dir, "-policies", c.policies, "-poll-timeout", "1s")
	cmd.Env = append(os.Environ(), "TELEGRAM_BOT_TOKEN="+token, "TELEGRAM_API_URL="+srv.URL(),
		"BOT_OPERATORS=1", "BOT_APPROVERS=1,2")
	cmd.Stdout, cmd.Stderr = &log, &log
	began := time.Now()
	if err := cmd.Start(); err != nil {
		return start{}, err
	}
	exit := make(chan error, 1)
	go func() { exit <- cmd.Wait() }()
	defer func() {
		cmd.Process.Signal(syscall.SIGTERM)
		select {
		case <-exit:
		case <-time.After(30 * time.Second):
			cmd.Process.Kill()
			<-exit
		}
	}()
	polls := func(n int) func(*telegramtest.Server) bool {
		return func(s *telegramtest.Server) bool { return len(s.CallsTo("getUpdates")) >= n }
	}
	if err := srv.WaitTimeout(60*time.Second, polls(1)); err != nil {
		return start{}, fmt.Errorf("no getUpdates: %w\n%s", err, log.String())
	}
	first := srv.CallsTo("getUpdates")[0].Time
	if err := srv.WaitTimeout(60*time.Second, polls(3)); err != nil {
		return start{}, fmt.Errorf("stopped polling: %w\n%s", err, log.String())
	}
	rss, err := peakRSS(cmd.Process.Pid)
	if err != nil {
		return start{}, err
	}
	return start{toUpdates: first.Sub(began), peakRSS: rss}, nil
}

// peakRSS reads VmHWM, the peak resident set size, of process pid.
func peakRSS(pid int) (int64, error) {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", pid))
	if err != nil {
		return 0, err
	}
	for _, line := range strings.Split(string(b), "\n") {
		if rest, ok := strings.CutPrefix(line, "VmHWM:"); ok {
			kb, err := strconv.ParseInt(strings.TrimSpace(strings.TrimSuffix(strings.TrimSpace(rest), "kB")), 10, 64)
			return kb << 10, err
		}
	}
	return 0, errors.New("no VmHWM in /proc status")
}

// report prints each start, the worst and the median, and the goal lines, and reports whether
// both goals were met.
func report(out io.Writer, base, big []start) bool {
	for i := range big {
		fmt.Fprintf(out, "start %d: empty %s %s; loaded %s %s\n", i+1,
			base[i].toUpdates.Round(time.Millisecond), mib(base[i].peakRSS), big[i].toUpdates.Round(time.Millisecond), mib(big[i].peakRSS))
	}
	toUpdates := func(s start) int64 { return int64(s.toUpdates) }
	rss := func(s start) int64 { return s.peakRSS }
	ok := true
	verdict := func(pass bool) string {
		ok = ok && pass
		if pass {
			return "PASS"
		}
		return "FAIL"
	}
	// The goal holds for every start, so the worst one is judged.
	lt, bt := time.Duration(worst(big, toUpdates)), time.Duration(worst(base, toUpdates))
	fmt.Fprintf(out, "%s  exec to taking updates: %s loaded, worst of %d (median %s; empty journal %s, median %s), goal ≤ %s\n",
		verdict(lt <= startGoal), lt.Round(time.Millisecond), len(big), time.Duration(median(big, toUpdates)).Round(time.Millisecond),
		bt.Round(time.Millisecond), time.Duration(median(base, toUpdates)).Round(time.Millisecond), startGoal)
	lr, br := worst(big, rss), worst(base, rss)
	fmt.Fprintf(out, "%s  peak RSS: %s loaded, worst of %d (empty journal %s, %.2f×), goal ≤ %s\n",
		verdict(lr <= rssGoal), mib(lr), len(big), mib(br), float64(lr)/float64(br), mib(rssGoal))
	return ok
}

func worst(ss []start, v func(start) int64) int64 {
	var w int64
	for _, s := range ss {
		w = max(w, v(s))
	}
	return w
}

func median(ss []start, v func(start) int64) int64 {
	xs := make([]int64, len(ss))
	for i, s := range ss {
		xs[i] = v(s)
	}
	slices.Sort(xs)
	return xs[len(xs)/2]
}

func mib(n int64) string { return fmt.Sprintf("%.1f MiB", float64(n)/(1<<20)) }
