package main

import (
	"bufio"
	"fmt"
	"io"
	"os"
	"regexp"
	"strconv"
	"strings"
	"time"

	"github.com/countersign/countersign/internal/cmd/quantile"
	"github.com/countersign/countersign/internal/stages"
)

// The breakdown of a tap: where the time from its update leaving the fake
// server to the approved message reaching it went. The bot, run with
// -log-level debug, logs a "tap stages" line a tap: when the update arrived at
// the process and when each step of its handling ended (package stages); the
// fake server knows when the update left and when the send reached it. All
// clocks are this machine's.

// The steps of a tap the bot does not mark: the fake server's (the update
// leaving it, the send reaching it) and the update's arrival at the bot, the
// start of its clock.
const (
	stepLeft    stages.Name = "left"
	stepArrived stages.Name = "arrived"
	stepReached stages.Name = "reached"
)

// stage is one span of a tap, from the end of one step to the end of the next.
type stage struct {
	name string // as the report names it
	// from and to are the steps it spans: the bot's (package stages), and
	// stepLeft, stepArrived and stepReached.
	from, to []stages.Name
	pacing   bool // Telegram's own pacing of the target chat: reported apart
}

// tapStages are the spans a tap's time is cut into, in order: they add up to
// its tap to send. A step that a tap did not pass (the cluster's journal slots
// on a single process) spans nothing, and the next span starts where the last
// step it passed ended. Each span names the steps that may end it, the first
// one found counting.
var tapStages = []stage{
	{name: "to the bot (webhook request)", from: []stages.Name{stepLeft}, to: []stages.Name{stepArrived}},
	{name: "inbox (stored durably)", to: []stages.Name{stages.Stored}},
	{name: "tap lane (to a worker)", to: []stages.Name{stages.Taken}},
	{name: "card lock (copies out)", to: []stages.Name{stages.Unlocked}},
	{name: "decision recorded", to: []stages.Name{stages.Decided}},
	{name: "checks (binding, holds, audience)", to: []stages.Name{stages.Checked}},
	{name: "write-ahead (committing)", to: []stages.Name{stages.Written}},
	{name: "fence proved", to: []stages.Name{stages.Fenced}},
	{name: "limiter: the chat's own pacing", to: []stages.Name{stages.Paced}, pacing: true},
	{name: "limiter: overall rate", to: []stages.Name{stages.Rated}},
	{name: "limiter: chat slot (journal, round trip)", to: []stages.Name{stages.ChatSlot}},
	{name: "limiter: chat slot (journal, paced)", to: []stages.Name{stages.ChatPaced}, pacing: true},
	{name: "limiter: bot's budget (second/pool)", to: []stages.Name{stages.Admitted}},
	{name: "fence proved again", to: []stages.Name{stages.Proved}},
	{name: "Bot API call reaching the server", to: []stages.Name{stepReached}},
}

// tapTrace is one tap's steps as the bot logged them.
type tapTrace struct {
	arrived time.Time
	steps   map[stages.Name]time.Time // the first time each step ended
}

// tapLine is the bot's debug line for a tap, as slog's text handler writes it.
var tapLine = regexp.MustCompile(`msg="tap stages" .*\bcallback=(\S+) arrived=(\d+) steps=(\S*)`)

// readTraces reads the tap lines of a process's log, by callback query id.
func readTraces(r io.Reader, into map[string]tapTrace) error {
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 64<<10), 1<<20)
	for sc.Scan() {
		m := tapLine.FindStringSubmatch(sc.Text())
		if m == nil {
			continue
		}
		ns, err := strconv.ParseInt(m[2], 10, 64)
		if err != nil {
			return fmt.Errorf("tap stages of %s: arrived %q: %w", m[1], m[2], err)
		}
		arrived := time.Unix(0, ns)
		steps, err := stages.Parse(arrived, m[3])
		if err != nil {
			return fmt.Errorf("tap stages of %s: %w", m[1], err)
		}
		tr := tapTrace{arrived: arrived, steps: map[stages.Name]time.Time{stepArrived: arrived}}
		for _, s := range steps {
			if _, ok := tr.steps[s.Name]; !ok {
				tr.steps[s.Name] = s.At
			}
			if s.Name == stages.Answered {
				break // the send's answer: what comes after (a reply, its own limiter steps) is not the tap's
			}
		}
		into[m[1]] = tr
	}
	return sc.Err()
}

// tracesOf reads the tap lines of every process's log.
func tracesOf(procs []*proc) (map[string]tapTrace, error) {
	out := map[string]tapTrace{}
	for _, p := range procs {
		f, err := os.Open(p.log.Name())
		if err != nil {
			return nil, err
		}
		err = readTraces(f, out)
		f.Close()
		if err != nil {
			return nil, fmt.Errorf("the log of %s: %w", p.name, err)
		}
	}
	return out, nil
}

// TapBreakdown is one tap cut into its spans.
type TapBreakdown struct {
	Left time.Duration // when its update left the fake server, from the load's start
	// Queued is how long its update waited at the fake server before it left
	// (behind the updates delivered before it, one at a time): not part of
	// the tap to send, which starts when it leaves.
	Queued time.Duration
	Total  time.Duration   // tap to send
	Spans  []time.Duration // as tapStages, 0 for a span it did not pass
	// Pacing is the spans that were the target chat's own pacing.
	Pacing time.Duration
	// Traced is false when the bot logged no steps for the tap: only Total is known.
	Traced bool
}

// Unpaced is the tap to send less the chat's own pacing.
func (b TapBreakdown) Unpaced() time.Duration { return b.Total - b.Pacing }

// breakdown cuts a tap whose update left at left and whose send reached the
// server at reached into tapStages by its trace.
func breakdown(left, reached time.Time, tr tapTrace, traced bool) TapBreakdown {
	b := TapBreakdown{Total: reached.Sub(left), Spans: make([]time.Duration, len(tapStages)), Traced: traced}
	if !traced {
		return b
	}
	steps := map[stages.Name]time.Time{stepLeft: left, stepReached: reached}
	for k, v := range tr.steps {
		steps[k] = v
	}
	last := left
	for i, s := range tapStages {
		for _, name := range s.to {
			if at, ok := steps[name]; ok {
				b.Spans[i] = at.Sub(last)
				last = at
				break
			}
		}
		if s.pacing {
			b.Pacing += b.Spans[i]
		}
	}
	return b
}

// Breakdown is the figures of every span over a configuration's taps.
type Breakdown struct {
	Traced int // taps with the bot's steps
	// Spans are p50, p99 and max of each span of tapStages over the traced taps.
	Spans [][3]time.Duration
	// Pacing and Unpaced are p50, p99 and max of the chat's own pacing, and
	// of the tap to send less it, over the traced taps.
	Pacing, Unpaced [3]time.Duration
	// SlowUnpaced counts the traced taps over slowTap less their pacing.
	SlowUnpaced int
	// Queued is p50, p99 and max of the taps' wait at the fake server before
	// they left, over all taps.
	Queued [3]time.Duration
}

func quantiles(ds []time.Duration) [3]time.Duration {
	return [3]time.Duration{quantile.Of(ds, 0.5), quantile.Of(ds, 0.99), quantile.Of(ds, 1)}
}

// summarize computes the Breakdown of taps.
func summarize(taps []TapBreakdown) Breakdown {
	var b Breakdown
	spans := make([][]time.Duration, len(tapStages))
	var pacing, unpaced, queued []time.Duration
	for _, t := range taps {
		queued = append(queued, t.Queued)
		if !t.Traced {
			continue
		}
		b.Traced++
		for i, d := range t.Spans {
			spans[i] = append(spans[i], d)
		}
		pacing, unpaced = append(pacing, t.Pacing), append(unpaced, t.Unpaced())
		if t.Unpaced() > slowTap {
			b.SlowUnpaced++
		}
	}
	for _, ds := range spans {
		b.Spans = append(b.Spans, quantiles(ds))
	}
	b.Pacing, b.Unpaced, b.Queued = quantiles(pacing), quantiles(unpaced), quantiles(queued)
	return b
}

// printBreakdown writes the spans' figures and each slow tap's spans.
func (f *Figures) printBreakdown(out io.Writer) {
	b := f.Breakdown
	fmt.Fprintf(out, "  tap to send by stage (%d of %d taps traced by the bot's debug log): p50, p99, max\n", b.Traced, f.Taps)
	fmt.Fprintf(out, "    %-42s %9s %9s %9s\n", "(before: queued at the fake server)", ms(b.Queued[0]), ms(b.Queued[1]), ms(b.Queued[2]))
	for i, s := range tapStages {
		fmt.Fprintf(out, "    %-42s %9s %9s %9s\n", s.name, ms(b.Spans[i][0]), ms(b.Spans[i][1]), ms(b.Spans[i][2]))
	}
	fmt.Fprintf(out, "    %-42s %9s %9s %9s\n", "= the chat's own pacing (apart)", ms(b.Pacing[0]), ms(b.Pacing[1]), ms(b.Pacing[2]))
	fmt.Fprintf(out, "    %-42s %9s %9s %9s; %d over %s\n", "= tap to send less the pacing", ms(b.Unpaced[0]), ms(b.Unpaced[1]), ms(b.Unpaced[2]), b.SlowUnpaced, ms(slowTap))
	for _, t := range f.SlowTaps {
		var parts []string
		for i, d := range t.Spans {
			if d >= time.Millisecond {
				parts = append(parts, fmt.Sprintf("%s %s", short(tapStages[i].name), ms(d)))
			}
		}
		if !t.Traced {
			parts = []string{"not traced"}
		}
		fmt.Fprintf(out, "    slow tap at %.1fs (queued %s before): %s: %s\n", t.Left.Seconds(), ms(t.Queued), ms(t.Total), strings.Join(parts, ", "))
	}
}

// short is a span's name without its parenthesis.
func short(name string) string {
	if i := strings.Index(name, " ("); i > 0 {
		return name[:i]
	}
	return name
}
