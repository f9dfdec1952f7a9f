package main

import (
	"math/rand/v2"
	"regexp"
	"strconv"
	"sync"
	"time"

	"github.com/countersign/countersign/agent/agenttest"
)

// fault is what the scripted model does to one request.
type fault int

const (
	clean       fault = iota // answers normally
	overload                 // 529 overloaded_error (an OpenAI-compatible server's 503)
	rateLimit                // 429 with retry-after-ms
	stall                    // the stream (or a plain body) stops halfway until the client gives up
	maxTokens                // the reply is cut at the output limit
	streamError              // an error event inside a stream that began with 200 (a 500 to a plain request)
	nFaults
)

// mix is the share of requests each fault strikes; the rest answer cleanly.
var mix = []struct {
	fault fault
	share float64
}{{overload, 0.20}, {rateLimit, 0.10}, {stall, 0.05}, {maxTokens, 0.05}, {streamError, 0.02}}

func (f fault) String() string {
	return [...]string{"clean", "overloaded", "429", "stall", "max_tokens", "error mid-stream"}[f]
}

// label names f as the provider of format says it; a 429 asks to wait wait.
func (f fault) label(format string, wait time.Duration) string {
	switch {
	case f == overload && format == agenttest.OpenAI:
		return "503 overloaded"
	case f == overload:
		return "529 overloaded"
	case f == rateLimit:
		return "429 retry-after-ms " + strconv.FormatInt(wait.Milliseconds(), 10)
	case f == stall:
		return "stalled stream"
	}
	return f.String()
}

// schedule is the fault of every request of every turn, drawn from a seeded
// generator per turn: the kth request of turn n meets the same fault whoever makes
// it, so two clients run against the same schedule however differently they ask.
type schedule struct {
	seed  uint64
	mu    sync.Mutex
	turns map[int]*drawn
}

type drawn struct {
	rng    *rand.Rand
	faults []fault
}

func newSchedule(seed uint64) *schedule {
	return &schedule{seed: seed, turns: map[int]*drawn{}}
}

// at is the fault of request k (from 0) of turn n.
func (s *schedule) at(n, k int) fault {
	s.mu.Lock()
	defer s.mu.Unlock()
	d := s.turns[n]
	if d == nil {
		d = &drawn{rng: rand.New(rand.NewPCG(s.seed, uint64(n)))}
		s.turns[n] = d
	}
	for len(d.faults) <= k {
		d.faults = append(d.faults, draw(d.rng.Float64()))
	}
	return d.faults[k]
}

// draw maps u in [0, 1) to a fault by the shares of mix.
func draw(u float64) fault {
	for _, m := range mix {
		if u < m.share {
			return m.fault
		}
		u -= m.share
	}
	return clean
}

// floor is the fewest requests turn n can be done in under its schedule: a turn
// needs two clean answers (the tool call, then the final answer), and every
// request that meets a fault, a max_tokens cut included, costs one more. So it is
// the position of the turn's second clean draw.
func (s *schedule) floor(n int) int {
	for k, cleans := 0, 0; ; k++ {
		if s.at(n, k) == clean {
			if cleans++; cleans == 2 {
				return k + 1
			}
		}
	}
}

// script answers the requests of the benchmark's turns: the first answer of a
// turn calls prepare_reply, the answer after its result is final. A turn and its
// requests are known by the operator's text ("bench turn N") every request
// carries, and by whether a tool result is in it.
type script struct {
	mu     sync.Mutex
	times  map[int][]time.Time // when each request of each turn came
	faults [nFaults]int        // drawn, over every request
	stalls []stallAt

	fault      func(turn, k int, since time.Duration, model string) fault
	retryAfter time.Duration // the wait a 429 asks for
}

// stallAt is a stalled request: its turn, its number in the turn, and whether
// it streamed.
type stallAt struct {
	turn, k  int
	streamed bool
}

// mixed is a script that draws each request's fault from sched; a 429 asks to
// wait retryAfter.
func mixed(sched *schedule, retryAfter time.Duration) *script {
	return &script{times: map[int][]time.Time{}, retryAfter: retryAfter,
		fault: func(turn, k int, _ time.Duration, _ string) fault { return sched.at(turn, k) }}
}

// burst is a script that answers 529 to every request of a turn's first d, but
// those to the fallback model, which always answer.
func burst(d time.Duration, fallback string) *script {
	return &script{times: map[int][]time.Time{}, fault: func(_, _ int, since time.Duration, model string) fault {
		if since < d && model != fallback {
			return overload
		}
		return clean
	}}
}

var (
	turnMark   = regexp.MustCompile(`bench turn (\d+)`)
	toolResult = regexp.MustCompile(`"type":\s*"tool_result"|"role":\s*"tool"`)
)

func turnText(n int) string {
	return "bench turn " + strconv.Itoa(n) + ": draft a short reply to the team, then tell me it is drafted."
}

// answer is the reply to req.
func (s *script) answer(req agenttest.Request) agenttest.Reply {
	m := turnMark.FindSubmatch(req.Body)
	if m == nil {
		return agenttest.Fail(agenttest.AuthError) // not ours: fail loudly
	}
	turn, _ := strconv.Atoi(string(m[1]))
	final := toolResult.Match(req.Body)
	s.mu.Lock()
	k := len(s.times[turn])
	s.times[turn] = append(s.times[turn], req.At)
	since := req.At.Sub(s.times[turn][0])
	s.mu.Unlock()
	f := s.fault(turn, k, since, req.Model)
	s.mu.Lock()
	s.faults[f]++
	if f == stall {
		s.stalls = append(s.stalls, stallAt{turn: turn, k: k, streamed: req.Streamed})
	}
	s.mu.Unlock()
	return reply(turn, final, f, s.retryAfter)
}

// reply is the answer of a turn's request, the tool call or the final answer,
// with fault f; a 429 asks to wait retryAfter.
func reply(turn int, final bool, f fault, retryAfter time.Duration) agenttest.Reply {
	stop, text := "tool_use", "I will draft it."
	uses := []agenttest.Use{agenttest.Call("prepare_reply", `{"text":"Draft for turn `+strconv.Itoa(turn)+`: the release moves to Friday."}`)}
	if final {
		stop, text, uses = "end_turn", "Drafted the reply for turn "+strconv.Itoa(turn)+".", nil
	}
	r := agenttest.Message(stop, text, uses...)
	switch f {
	case overload:
		return agenttest.Fail(agenttest.Overload)
	case rateLimit:
		return agenttest.RateLimitedMs(retryAfter)
	case stall:
		return r.StallAfter(3, 0)
	case maxTokens:
		return agenttest.Message("max_tokens", text, uses...)
	case streamError:
		return r.FailAfter(3, agenttest.ServerError)
	}
	return r
}

// requestsOf is how many requests turn n made.
func (s *script) requestsOf(n int) int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return len(s.times[n])
}

// stallCuts is how long each stalled request held before the client gave up on
// it, measured here, on the server: from its arrival to the turn's next request.
// A stall that no request followed is not measured.
func (s *script) stallCuts() (streamed, plain []time.Duration) {
	s.mu.Lock()
	defer s.mu.Unlock()
	for _, st := range s.stalls {
		ts := s.times[st.turn]
		if st.k+1 >= len(ts) {
			continue
		}
		cut := ts[st.k+1].Sub(ts[st.k])
		if st.streamed {
			streamed = append(streamed, cut)
		} else {
			plain = append(plain, cut)
		}
	}
	return streamed, plain
}

// drawnFaults is how many requests met each fault.
func (s *script) drawnFaults() [nFaults]int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.faults
}
