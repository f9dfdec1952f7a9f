package stages_test

import (
	"context"
	"testing"
	"time"

	"github.com/countersign/countersign/internal/stages"
)

// A context without a clock takes marks and keeps nothing; one with a clock
// keeps them in order, and String and Parse carry them through a log line to
// the microsecond.
func TestMarksGoThroughALogLine(t *testing.T) {
	stages.Mark(context.Background(), "nowhere") // no clock: nothing to keep, no panic
	start := time.Now()
	ctx, c := stages.With(context.Background(), start)
	c.MarkAt(stages.Stored, start.Add(1500*time.Microsecond))
	stages.Mark(ctx, stages.Taken)
	steps := c.Steps()
	if len(steps) != 2 || steps[0].Name != "stored" || steps[1].Name != "taken" || steps[1].At.Before(start) {
		t.Fatalf("steps: %+v", steps)
	}
	back, err := stages.Parse(start, c.String())
	if err != nil {
		t.Fatal(err)
	}
	for i, s := range back {
		if s.Name != steps[i].Name || s.At.Sub(steps[i].At).Abs() >= time.Microsecond {
			t.Errorf("step %d: got %s at %v, want %s at %v", i, s.Name, s.At, steps[i].Name, steps[i].At)
		}
	}
	for _, bad := range []string{"stored", "stored:x", ":12", "a:1,b"} {
		if _, err := stages.Parse(start, bad); err == nil {
			t.Errorf("Parse(%q): no error", bad)
		}
	}
}
