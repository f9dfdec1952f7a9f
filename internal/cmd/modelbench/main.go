// Command modelbench measures the model layer's goodput. Each of N turns asks the
// scripted model server (agent/agenttest, over real HTTP) for one prepare_reply
// call and then the final answer, under a mix of faults drawn per request by a
// seeded generator: overloads, 429s with retry-after-ms, stalled streams, replies
// cut at max_tokens, errors inside a stream. The turns run once through
// Countersign's agent loop (Watch, Recovery, the turn's budget, a real operator and
// journal) and once through the naive retry loop a careful user writes without
// them, against the same schedule; then one turn meets a burst of overloads, with
// and without a fallback model. It reports each figure beside its floor or
// baseline, prints the goals as PASS or FAIL lines, and exits 1 when one is missed.
//
//	go run ./internal/cmd/modelbench -turns 200 -seed 1 -provider anthropic
//
// Times are scaled to keep the run short; the output says how.
package main

import (
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"os"
	"time"

	"github.com/countersign/countersign/agent/agenttest"
	"github.com/countersign/countersign/journal"
	"github.com/countersign/countersign/model"
	"github.com/countersign/countersign/policy"
)

type config struct {
	turns    int
	seed     uint64
	provider string
	json     bool
	policies string
	timing   timing
}

// timing is how the benchmark scales the policy's times: backoff divides the
// backoff, the turn's wait budget and the burst; watch divides the stall watch's
// silences and the request timeout (a stall is cut by one or the other).
// retryAfter is the wait a 429 asks for: the service's word, not scaled.
type timing struct {
	backoff, watch int
	retryAfter     time.Duration
}

var defaultTiming = timing{backoff: 20, watch: 100, retryAfter: 300 * time.Millisecond}

// burstLength is how long the burst answers 529 to every request, unscaled: the
// burst the default policy is meant to ride out without a fallback.
const burstLength = 10 * time.Second

// model is m with its times scaled.
func (t timing) model(m policy.Model) policy.Model {
	b := time.Duration(t.backoff)
	w := time.Duration(t.watch)
	m.Backoff.Base, m.Backoff.Cap, m.TurnWait = m.Backoff.Base/b, m.Backoff.Cap/b, m.TurnWait/b
	m.StallWarning, m.StallAbort = m.StallWarning/w, m.StallAbort/w
	return m
}

func (t timing) requestTimeout() time.Duration {
	return model.DefaultRequestTimeout / time.Duration(t.watch)
}

func (t timing) burst() time.Duration { return burstLength / time.Duration(t.backoff) }

// describe says how m's times were scaled.
func (t timing) describe(m policy.Model) string {
	s := t.model(m)
	return fmt.Sprintf("backoff %s..%s -> %s..%s, turn wait %s -> %s and the burst %s -> %s (1/%d); "+
		"stall warning/abort %s/%s -> %s/%s and request timeout %s -> %s (1/%d)",
		m.Backoff.Base, m.Backoff.Cap, s.Backoff.Base, s.Backoff.Cap, m.TurnWait, s.TurnWait, burstLength, t.burst(), t.backoff,
		m.StallWarning, m.StallAbort, s.StallWarning, s.StallAbort, model.DefaultRequestTimeout, t.requestTimeout(), t.watch)
}

func main() {
	c := config{timing: defaultTiming}
	flag.IntVar(&c.turns, "turns", 200, "turns to run under the fault mix")
	flag.Uint64Var(&c.seed, "seed", 1, "seed of the fault schedule")
	flag.StringVar(&c.provider, "provider", agenttest.Anthropic, "wire format: anthropic or openai")
	flag.BoolVar(&c.json, "json", false, "print the figures as one JSON object")
	flag.StringVar(&c.policies, "policies", "policies.yaml", "policy file to start from")
	flag.Parse()
	if c.turns < 1 || (c.provider != agenttest.Anthropic && c.provider != agenttest.OpenAI) {
		fmt.Fprintln(os.Stderr, "modelbench: -turns must be positive and -provider anthropic or openai")
		os.Exit(2)
	}
	rep, err := measure(context.Background(), c)
	if err != nil {
		fmt.Fprintln(os.Stderr, "modelbench:", err)
		os.Exit(1)
	}
	if c.json {
		enc := json.NewEncoder(os.Stdout)
		enc.SetIndent("", "  ")
		enc.SetEscapeHTML(false)
		err = enc.Encode(rep)
	} else {
		err = rep.print(os.Stdout)
	}
	if err != nil {
		fmt.Fprintln(os.Stderr, "modelbench:", err)
		os.Exit(1)
	}
	if !rep.passed() {
		os.Exit(1)
	}
}

// measure runs the mix through both clients, then the bursts, and judges the goals.
func measure(ctx context.Context, c config) (report, error) {
	p, err := policy.Load(c.policies)
	if err != nil {
		return report{}, err
	}
	p.Access = policy.Access{Operators: []policy.UserID{requester}, Approvers: []policy.UserID{requester}}
	p.Model = c.timing.model(p.Models())
	rep := newReport(c, p)

	sched := newSchedule(c.seed)
	seen := &steps{}
	cs, err := underMix(ctx, c, p, sched, func(r *rig, url string) client {
		return countersign(r, c.provider, url, c.timing, seen)
	})
	if err != nil {
		return report{}, fmt.Errorf("countersign: %w", err)
	}
	nv, err := underMix(ctx, c, p, newSchedule(c.seed), func(r *rig, url string) client {
		return naive(r, c.provider, url, c.timing)
	})
	if err != nil {
		return report{}, fmt.Errorf("naive: %w", err)
	}
	rep.addMix(cs, nv, sched, seen)

	for _, b := range []struct {
		name     string
		fallback string
		naive    bool
	}{{"Countersign, no fallback", "", false}, {"Countersign, fallback model", fallbacks[c.provider], false}, {"naive retry loop", "", true}} {
		q := *p
		q.Model.Fallback = b.fallback
		fig, err := underBurst(ctx, c, &q, b.name, b.naive)
		if err != nil {
			return report{}, fmt.Errorf("burst: %s: %w", b.name, err)
		}
		rep.Burst = append(rep.Burst, fig)
	}
	rep.judge()
	return rep, nil
}

// turnResult is one turn as a client ran it.
type turnResult struct {
	n        int
	done     bool
	how      string
	requests int // as the server counted them
	floor    int
	toolRuns int
	elapsed  time.Duration
}

// mixRun is one client's turns under the mix, and the server that answered them.
type mixRun struct {
	turns  []turnResult
	script *script
}

// underMix runs c.turns turns, one after the other, through the client that
// build makes, against a scripted server drawing its faults from sched.
func underMix(ctx context.Context, c config, p *policy.Policy, sched *schedule, build func(*rig, string) client) (mixRun, error) {
	s := mixed(sched, c.timing.retryAfter)
	srv := agenttest.Start(s.answer)
	defer srv.Close()
	r, err := newRig(ctx, p)
	if err != nil {
		return mixRun{}, err
	}
	defer r.close()
	run := mixRun{script: s}
	cl := build(r, srv.URL)
	for n := 1; n <= c.turns; n++ {
		t, err := turn(ctx, r, cl, n)
		if err != nil {
			return mixRun{}, err
		}
		t.requests, t.floor = s.requestsOf(n), sched.floor(n)
		run.turns = append(run.turns, t)
	}
	return run, nil
}

// turn runs turn n as a task of its own and counts the tool's runs in it.
func turn(ctx context.Context, r *rig, cl client, n int) (turnResult, error) {
	task, err := r.op.StartTask(ctx, journal.Task{Requester: requester, Chat: "7", Summary: fmt.Sprintf("modelbench turn %d", n)})
	if err != nil {
		return turnResult{}, err
	}
	start := time.Now()
	done, how, err := cl(ctx, task.ID, n)
	if err != nil {
		return turnResult{}, err
	}
	t := turnResult{n: n, how: how, elapsed: time.Since(start)}
	if t.toolRuns, err = r.toolRuns(ctx, task.ID); err != nil {
		return turnResult{}, err
	}
	t.done = done && t.toolRuns > 0
	return t, nil
}

// underBurst runs one turn against a server that answers 529 to every request of
// the turn's first c.timing.burst(), but those to p's fallback model.
func underBurst(ctx context.Context, c config, p *policy.Policy, name string, naively bool) (burstFigures, error) {
	s := burst(c.timing.burst(), p.Model.Fallback)
	srv := agenttest.Start(s.answer)
	defer srv.Close()
	r, err := newRig(ctx, p)
	if err != nil {
		return burstFigures{}, err
	}
	defer r.close()
	cl := countersign(r, c.provider, srv.URL, c.timing, &steps{})
	if naively {
		cl = naive(r, c.provider, srv.URL, c.timing)
	}
	t, err := turn(ctx, r, cl, 1)
	if err != nil {
		return burstFigures{}, err
	}
	f := burstFigures{Client: name, Fallback: p.Model.Fallback, Done: t.done, Requests: s.requestsOf(1), Ms: ms(t.elapsed), How: t.how, naive: naively}
	for _, req := range srv.Requests() {
		if p.Model.Fallback != "" && req.Model == p.Model.Fallback {
			f.FallbackRequests++
		}
	}
	return f, nil
}

func ms(d time.Duration) float64 { return float64(d.Microseconds()) / 1000 }
