package main

import (
	"fmt"
	"strings"
	"testing"
	"time"
)

// A tap's debug line is read back and cut into spans that add up to its tap
// to send, the chat's pacing apart; a step it did not pass spans nothing.
func TestATapIsCutIntoItsStages(t *testing.T) {
	left := time.Unix(1_800_000_000, 0)
	arrived := left.Add(time.Millisecond)
	ms := func(n float64) int64 { return int64(n * 1000) } // µs from arrived
	line := fmt.Sprintf(`time=2026-12-07T00:00:00.000Z level=DEBUG msg="tap stages" replica=r1 update=42 callback=4000000000000000001 arrived=%d steps=stored:%d,taken:%d,unlocked:%d,decided:%d,checked:%d,written:%d,fenced:%d,paced:%d,rated:%d,admitted:%d,proved:%d,answered:%d,paced:%d,done:%d`,
		arrived.UnixNano(), ms(2), ms(2.5), ms(300), ms(305), ms(310), ms(315), ms(316), ms(816), ms(817), ms(818), ms(819), ms(825), ms(2000), ms(2100))
	line = strings.Replace(line, ",done:", ",chatpaced:2050000,done:", 1)
	traces := map[string]tapTrace{}
	if err := readTraces(strings.NewReader("time=x level=INFO msg=other\n"+line+"\n"), traces); err != nil {
		t.Fatal(err)
	}
	tr, ok := traces["4000000000000000001"]
	if !ok || !tr.arrived.Equal(arrived) {
		t.Fatalf("traces: %+v", traces)
	}
	reached := arrived.Add(822 * time.Millisecond)
	b := breakdown(left, reached, tr, true)
	var sum time.Duration
	for _, d := range b.Spans {
		sum += d
	}
	if sum != b.Total || b.Total != 823*time.Millisecond {
		t.Errorf("spans add up to %v, tap to send %v; want both 823ms", sum, b.Total)
	}
	span := func(name string) time.Duration {
		for i, s := range tapStages {
			if s.name == name {
				return b.Spans[i]
			}
		}
		t.Fatalf("no stage %q", name)
		return 0
	}
	for _, tt := range []struct {
		stage string
		want  time.Duration
	}{
		{"to the bot (webhook request)", time.Millisecond},
		{"card lock (copies out)", 297500 * time.Microsecond},
		{"limiter: the chat's own pacing", 500 * time.Millisecond},
		{"limiter: chat slot (journal, round trip)", 0}, // a single process takes no journal slot
		{"Bot API call reaching the server", 3 * time.Millisecond},
	} {
		if got := span(tt.stage); got != tt.want {
			t.Errorf("%s: %v, want %v", tt.stage, got, tt.want)
		}
	}
	if b.Pacing != 500*time.Millisecond || b.Unpaced() != 323*time.Millisecond {
		t.Errorf("pacing %v, less pacing %v; want 500ms and 323ms (the limiter's marks of a reply after the send do not count)", b.Pacing, b.Unpaced())
	}
	s := summarize([]TapBreakdown{b, {Total: time.Second}})
	if s.Traced != 1 || s.SlowUnpaced != 1 || s.Unpaced[2] != 323*time.Millisecond {
		t.Errorf("summary: %+v", s)
	}
}
