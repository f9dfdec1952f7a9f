package main

import (
	"fmt"
	"io"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/countersign/countersign/internal/cmd/quantile"

	"github.com/countersign/countersign/model"
	"github.com/countersign/countersign/policy"
)

// report is the run's figures, each beside its floor or baseline, and the goals.
type report struct {
	Turns    int    `json:"turns"`
	Seed     uint64 `json:"seed"`
	Provider string `json:"provider"`
	Model    string `json:"model"`
	Scaled   string `json:"time_scaled"`
	// Mix is each fault's share, as set and as drawn by Countersign's requests;
	// FailingShare is the drawn share of requests that met any fault, and
	// FormulaFloor 2/(1-FailingShare).
	Mix          []share        `json:"mix"`
	Drawn        int            `json:"drawn_requests"`
	FailingShare float64        `json:"failing_share"`
	FormulaFloor float64        `json:"floor_formula"`
	Countersign  runFigures     `json:"countersign"`
	Naive        runFigures     `json:"naive"`
	Recovery     map[string]int `json:"recovery_steps"`
	BurstMs      float64        `json:"burst_ms"`
	Burst        []burstFigures `json:"burst"`
	Goals        []goal         `json:"goals"`

	abort, requestTimeout time.Duration
}

type share struct {
	Fault string  `json:"fault"`
	Set   float64 `json:"set"`
	Drawn float64 `json:"drawn"`
}

// runFigures are one client's turns under the mix. Requests and the floor are
// per completed turn; the times are over every turn.
type runFigures struct {
	Turns             int       `json:"turns"`
	Done              int       `json:"completed"`
	RequestsPerDone   float64   `json:"requests_per_completed_turn"`
	FloorPerDone      float64   `json:"floor_per_completed_turn"`
	VsFloor           float64   `json:"vs_floor"`
	DuplicateToolRuns int       `json:"duplicate_tool_runs"`
	MedianMs          float64   `json:"median_turn_ms"`
	P90Ms             float64   `json:"p90_turn_ms"`
	TotalMs           float64   `json:"total_ms"`
	StreamStalls      cuts      `json:"stream_stalls"`
	PlainStalls       cuts      `json:"plain_stalls"`
	Incomplete        []string  `json:"incomplete"`
	streamCuts        []float64 // ms
}

// cuts are the stalls of one kind and how long each held before it was cut.
type cuts struct {
	N        int     `json:"n"`
	MinMs    float64 `json:"min_ms"`
	MedianMs float64 `json:"median_ms"`
	MaxMs    float64 `json:"max_ms"`
}

type burstFigures struct {
	Client           string  `json:"client"`
	Fallback         string  `json:"fallback,omitempty"`
	Done             bool    `json:"completed"`
	Requests         int     `json:"requests"`
	FallbackRequests int     `json:"fallback_requests"`
	Ms               float64 `json:"ms"`
	How              string  `json:"end"`
	naive            bool    // the baseline's run, not Countersign's
}

type goal struct {
	Goal string `json:"goal"`
	Pass bool   `json:"pass"`
	Got  string `json:"got"`
}

func newReport(c config, p *policy.Policy) report {
	m := p.Models()
	return report{Turns: c.turns, Seed: c.seed, Provider: c.provider, Model: models[c.provider],
		Scaled: c.timing.describe(policy.DefaultModel()), BurstMs: ms(c.timing.burst()),
		abort: m.StallAbort, requestTimeout: c.timing.requestTimeout()}
}

// addMix adds the figures of both clients' runs under the mix.
func (r *report) addMix(cs, nv mixRun, sched *schedule, seen *steps) {
	drawn := cs.script.drawnFaults()
	for _, f := range drawn {
		r.Drawn += f
	}
	for _, m := range mix {
		d := float64(drawn[m.fault]) / float64(max(r.Drawn, 1))
		r.Mix = append(r.Mix, share{Fault: m.fault.label(r.Provider, cs.script.retryAfter), Set: m.share, Drawn: d})
		r.FailingShare += d
	}
	r.FormulaFloor = 2 / (1 - r.FailingShare)
	r.Countersign, r.Naive = figuresOf(cs, sched), figuresOf(nv, sched)
	r.Recovery = map[string]int{}
	for _, a := range []model.Action{model.ActionRetry, model.ActionRaise, model.ActionStallWarning, model.ActionStallAbort, model.ActionFallback, model.ActionStop} {
		r.Recovery[string(a)] = seen.of(a)
	}
}

func figuresOf(run mixRun, sched *schedule) runFigures {
	f := runFigures{Turns: len(run.turns)}
	var requests, floor int
	var times []time.Duration
	for _, t := range run.turns {
		times = append(times, t.elapsed)
		f.DuplicateToolRuns += max(t.toolRuns-1, 0)
		if !t.done {
			var drew []string
			for k := range t.requests {
				drew = append(drew, sched.at(t.n, k).String())
			}
			f.Incomplete = append(f.Incomplete, fmt.Sprintf("turn %d: %s (requests met: %s)", t.n, t.how, strings.Join(drew, ", ")))
			continue
		}
		f.Done++
		requests += t.requests
		floor += t.floor
	}
	if f.Done > 0 {
		f.RequestsPerDone, f.FloorPerDone = float64(requests)/float64(f.Done), float64(floor)/float64(f.Done)
		f.VsFloor = f.RequestsPerDone / f.FloorPerDone
	}
	f.MedianMs, f.P90Ms = ms(quantile.Of(times, 0.5)), ms(quantile.Of(times, 0.9))
	for _, t := range times {
		f.TotalMs += ms(t)
	}
	streamed, plain := run.script.stallCuts()
	f.StreamStalls, f.PlainStalls = cutsOf(streamed), cutsOf(plain)
	for _, d := range streamed {
		f.streamCuts = append(f.streamCuts, ms(d))
	}
	return f
}

func cutsOf(ds []time.Duration) cuts {
	if len(ds) == 0 {
		return cuts{}
	}
	return cuts{N: len(ds), MinMs: ms(quantile.Of(ds, 0)), MedianMs: ms(quantile.Of(ds, 0.5)), MaxMs: ms(quantile.Of(ds, 1))}
}

// cutWindow is when a stall cut at the watch's abort may come: not before the
// abort, and not later than a fifth of it (at least 50 ms) after, for the
// watch's ticks and a busy machine.
func (r *report) cutWindow() (time.Duration, time.Duration) {
	return r.abort, r.abort + max(r.abort/5, 50*time.Millisecond)
}

// judge sets the goals.
func (r *report) judge() {
	cs := r.Countersign
	r.Goals = append(r.Goals,
		goal{Goal: "≥ 99% of turns complete under the mix", Pass: cs.Done*100 >= 99*cs.Turns,
			Got: fmt.Sprintf("%d/%d (%.1f%%)", cs.Done, cs.Turns, 100*float64(cs.Done)/float64(cs.Turns))},
		goal{Goal: "requests per completed turn within 10% of the floor", Pass: cs.Done > 0 && cs.VsFloor <= 1.10,
			Got: fmt.Sprintf("%.2f against %.2f (%.2f×)", cs.RequestsPerDone, cs.FloorPerDone, cs.VsFloor)},
		goal{Goal: "0 duplicate tool runs", Pass: cs.DuplicateToolRuns == 0, Got: fmt.Sprint(cs.DuplicateToolRuns)})
	lo, hi := r.cutWindow()
	in := 0
	for _, c := range cs.streamCuts {
		if c >= ms(lo) && c <= ms(hi) {
			in++
		}
	}
	g := goal{Goal: fmt.Sprintf("stalls cut at the watch's abort (%s)", r.abort), Pass: in > 0 && in == len(cs.streamCuts),
		Got: fmt.Sprintf("%d of %d streams cut in %s..%s (%s..%s)", in, len(cs.streamCuts), lo, hi, msText(cs.StreamStalls.MinMs), msText(cs.StreamStalls.MaxMs))}
	if len(cs.streamCuts) == 0 {
		g.Got = "no stalled stream was drawn: nothing measured"
	}
	r.Goals = append(r.Goals, g)
	for _, b := range r.Burst {
		if b.Fallback == "" && !b.naive {
			r.Goals = append(r.Goals, goal{Goal: "the burst survived without a fallback model", Pass: b.Done,
				Got: fmt.Sprintf("%s after %d requests in %s", doneText(b.Done), b.Requests, msText(b.Ms))})
		}
	}
}

func (r *report) passed() bool {
	for _, g := range r.Goals {
		if !g.Pass {
			return false
		}
	}
	return true
}

func (r *report) print(out io.Writer) error {
	w := &errWriter{w: out}
	r.printMix(w)
	r.printBurst(w)
	w.printf("\n")
	for _, g := range r.Goals {
		verdict := "PASS"
		if !g.Pass {
			verdict = "FAIL"
		}
		w.printf("%s  %s: %s\n", verdict, g.Goal, g.Got)
	}
	return w.err
}

// printMix prints the mix and both clients' figures under it.
func (r *report) printMix(w *errWriter) {
	w.printf("modelbench: %d turns over %s (%s), seed %d; a turn: the model calls prepare_reply, then answers\n",
		r.Turns, r.Provider, r.Model, r.Seed)
	var set, drew []string
	for _, m := range r.Mix {
		set = append(set, fmt.Sprintf("%s %.0f%%", m.Fault, 100*m.Set))
		drew = append(drew, fmt.Sprintf("%s %.1f%%", strings.Fields(m.Fault)[0], 100*m.Drawn))
	}
	w.printf("fault mix, drawn per request from a seeded generator per turn: %s; the rest answer\n", strings.Join(set, ", "))
	w.printf("drawn by Countersign's %d requests: %s; any fault: p = %.1f%%\n", r.Drawn, strings.Join(drew, ", "), 100*r.FailingShare)
	w.printf("time scaled: %s\n\n", r.Scaled)

	cs, nv := r.Countersign, r.Naive
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, "under the mix\tturns done\trequests/done turn\tfloor\tvs floor\tduplicate tool runs\tmedian turn\tp90 turn\tall turns")
	for _, row := range []struct {
		name string
		f    runFigures
	}{{"Countersign", cs}, {"naive retry loop", nv}} {
		f := row.f
		fmt.Fprintf(tw, "%s\t%d/%d\t%.2f\t%.2f\t%.2f×\t%d\t%s\t%s\t%s\n", row.name, f.Done, f.Turns, f.RequestsPerDone, f.FloorPerDone,
			f.VsFloor, f.DuplicateToolRuns, msText(f.MedianMs), msText(f.P90Ms), msText(f.TotalMs))
	}
	tw.Flush()
	w.printf("floor: the requests up to each completed turn's second clean answer in its schedule (a turn needs two;\n"+
		"every fault, a max_tokens cut included, costs one more request); 2/(1-p) = %.2f\n", r.FormulaFloor)
	w.printf("naive: %d immediate retries of a failed request (an error or a cut reply), the whole turn run again, tool included, up to %d times; plain requests with the same timeout\n",
		naiveRetries, naiveRuns)
	w.printf("stalls: Countersign %d streams cut after %s..%s (median %s; the watch's abort %s), %d plain retries after an abort held to the request timeout (%s..%s); naive %d held to the request timeout %s (%s..%s)\n",
		cs.StreamStalls.N, msText(cs.StreamStalls.MinMs), msText(cs.StreamStalls.MaxMs), msText(cs.StreamStalls.MedianMs), r.abort,
		cs.PlainStalls.N, msText(cs.PlainStalls.MinMs), msText(cs.PlainStalls.MaxMs),
		nv.PlainStalls.N, r.requestTimeout, msText(nv.PlainStalls.MinMs), msText(nv.PlainStalls.MaxMs))
	w.printf("Countersign's recovery: %d retries, %d raised output limits, %d stall warnings, %d stall aborts, %d give-ups\n",
		r.Recovery[string(model.ActionRetry)], r.Recovery[string(model.ActionRaise)], r.Recovery[string(model.ActionStallWarning)],
		r.Recovery[string(model.ActionStallAbort)], r.Recovery[string(model.ActionStop)])
	for _, row := range []struct {
		name string
		f    runFigures
	}{{"Countersign", cs}, {"naive", nv}} {
		for _, s := range row.f.Incomplete {
			w.printf("not completed, %s: %s\n", row.name, s)
		}
	}
}

// printBurst prints the burst's runs.
func (r *report) printBurst(w *errWriter) {
	w.printf("\nburst: every request answered %s for the turn's first %s (scaled); requests to the fallback model answer\n",
		strings.Fields(overload.label(r.Provider, 0))[0], msText(r.BurstMs))
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, "burst\tcompleted\trequests\ttime")
	for _, b := range r.Burst {
		req := fmt.Sprint(b.Requests)
		if b.Fallback != "" {
			req += fmt.Sprintf(" (%d to %s)", b.FallbackRequests, b.Fallback)
		}
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\n", b.Client, doneText(b.Done), req, msText(b.Ms))
	}
	tw.Flush()
}

func doneText(done bool) string {
	if done {
		return "yes"
	}
	return "no"
}

// msText is a time in milliseconds, written the way a person reads it.
func msText(v float64) string {
	d := time.Duration(v * float64(time.Millisecond))
	switch {
	case d >= 10*time.Second:
		return d.Round(100 * time.Millisecond).String()
	case d >= time.Second:
		return d.Round(10 * time.Millisecond).String()
	}
	return d.Round(time.Millisecond).String()
}

// errWriter keeps the first write error, so that printing need not check each.
type errWriter struct {
	w   io.Writer
	err error
}

func (e *errWriter) Write(p []byte) (int, error) {
	if e.err != nil {
		return 0, e.err
	}
	n, err := e.w.Write(p)
	e.err = err
	return n, err
}

func (e *errWriter) printf(format string, args ...any) { fmt.Fprintf(e, format, args...) }
