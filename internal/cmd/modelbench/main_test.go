package main

import (
	"bytes"
	"context"
	"strings"
	"testing"
	"time"

	"github.com/countersign/countersign/agent/agenttest"
)

// fast scales time further than the command does, so that the test is quick:
// backoff 10ms..300ms, stall abort 75ms, request timeout 200ms, a 100ms burst.
var fast = timing{backoff: 100, watch: 600, retryAfter: 50 * time.Millisecond}

func TestModelbench(t *testing.T) {
	if testing.Short() {
		t.Skip("runs the benchmark")
	}
	for _, kind := range []string{agenttest.Anthropic, agenttest.OpenAI} {
		t.Run(kind, func(t *testing.T) {
			t.Parallel()
			rep, err := measure(context.Background(), config{turns: 20, seed: 1, provider: kind, policies: "../../../policies.yaml", timing: fast})
			if err != nil {
				t.Fatal(err)
			}
			cs := rep.Countersign
			if cs.Done != 20 || cs.DuplicateToolRuns != 0 {
				t.Errorf("Countersign: %d/20 turns done, %d duplicate tool runs; want 20, 0: %q", cs.Done, cs.DuplicateToolRuns, cs.Incomplete)
			}
			// The schedule is fixed by the seed, and Countersign never gives up
			// under it: it makes exactly the requests the floor counts.
			if cs.RequestsPerDone != cs.FloorPerDone {
				t.Errorf("Countersign: %.2f requests a turn, want the floor %.2f", cs.RequestsPerDone, cs.FloorPerDone)
			}
			if rep.Naive.Turns != 20 || rep.Naive.FloorPerDone == 0 {
				t.Errorf("naive: %+v, want 20 turns measured", rep.Naive)
			}
			if cs.StreamStalls.N == 0 || cs.StreamStalls.MinMs < ms(rep.abort) {
				t.Errorf("stalls: %+v, want some, none cut before the abort %s", cs.StreamStalls, rep.abort)
			}
			if len(rep.Burst) != 3 || !rep.Burst[0].Done || !rep.Burst[1].Done || rep.Burst[1].FallbackRequests == 0 || rep.Burst[2].Done {
				t.Errorf("burst: %+v, want both Countersign runs done, the second through the fallback, and the naive one failed", rep.Burst)
			}
			var out bytes.Buffer
			if err := rep.print(&out); err != nil {
				t.Fatal(err)
			}
			for _, want := range []string{"time scaled: ", "naive retry loop", "requests per completed turn within 10% of the floor", "the burst survived without a fallback model"} {
				if !strings.Contains(out.String(), want) {
					t.Errorf("the report does not say %q:\n%s", want, out.String())
				}
			}
		})
	}
}
