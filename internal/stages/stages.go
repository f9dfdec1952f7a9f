// Package stages times the steps of one piece of work as it passes through the
// layers that carry it out: a tap on a card goes through the inbox, the
// decision, the checks before the write-ahead, the write-ahead, the fence, the
// rate limiter and the Bot API call, each in a package of its own. Each layer
// marks the step it just finished on the clock its context carries, so that a
// slow piece of work can be told apart by its slow step. A context without a
// clock costs a Mark one context lookup and nothing else: the clock is made
// only where someone will read it (a debug log line).
package stages

import (
	"context"
	"fmt"
	"strings"
	"sync"
	"time"
)

// Clock holds the marks of one piece of work, in the order they were made. It
// is safe for concurrent use.
type Clock struct {
	start time.Time
	mu    sync.Mutex
	marks []Step
}

// Step is one mark: the step that ended, and when.
type Step struct {
	Name Name
	At   time.Time
}

// Name names a step. The steps of a tap, in the order they end, are the
// constants below: the layers mark them and the load run reads them back
// (internal/cmd/loadbench), so both spell them from here.
type Name string

// The steps of a tap on a card, from its update stored to its send answered.
const (
	Stored    Name = "stored"    // the update is in the inbox, durably
	Taken     Name = "taken"     // a tap worker took it
	Unlocked  Name = "unlocked"  // the card's lock is held (the copies of the card are out)
	Decided   Name = "decided"   // the decision is recorded
	Checked   Name = "checked"   // the checks before the write-ahead passed (binding, holds, audience)
	Written   Name = "written"   // the write-ahead (committing) is durable
	Fenced    Name = "fenced"    // the fence is proved
	Paced     Name = "paced"     // the chat's own pacing is over: Telegram's limit in one chat
	Rated     Name = "rated"     // the overall rate admits the send
	ChatSlot  Name = "chatslot"  // among replicas, the chat's slot is taken without a wait (a round trip)
	ChatPaced Name = "chatpaced" // among replicas, the chat's slot is taken after the chat's pacing
	Admitted  Name = "admitted"  // the bot's budget (its second, or the replicas' pool) admits it
	Proved    Name = "proved"    // the fence is proved again, right before the write
	Answered  Name = "answered"  // the Bot API answered the send
	Recorded  Name = "recorded"  // the outcome is recorded
	Done      Name = "done"      // the tap is handled
)

type key struct{}

// With returns ctx carrying a new clock whose work began at start, and the
// clock.
func With(ctx context.Context, start time.Time) (context.Context, *Clock) {
	c := &Clock{start: start}
	return context.WithValue(ctx, key{}, c), c
}

// Mark records that step ended now, on the clock ctx carries, if any.
func Mark(ctx context.Context, step Name) {
	if c, ok := ctx.Value(key{}).(*Clock); ok {
		c.MarkAt(step, time.Now())
	}
}

// MarkAt records that step ended at at.
func (c *Clock) MarkAt(step Name, at time.Time) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.marks = append(c.marks, Step{Name: step, At: at})
}

// Steps returns the marks made so far, in the order they were made.
func (c *Clock) Steps() []Step {
	c.mu.Lock()
	defer c.mu.Unlock()
	return append([]Step(nil), c.marks...)
}

// String writes the marks as "name:µs,name:µs,...", each in microseconds
// from the start: one token with no spaces, for a log line that a program
// reads back (Parse).
func (c *Clock) String() string {
	var b strings.Builder
	for i, s := range c.Steps() {
		if i > 0 {
			b.WriteByte(',')
		}
		fmt.Fprintf(&b, "%s:%d", s.Name, s.At.Sub(c.start).Microseconds())
	}
	return b.String()
}

// Parse reads back what String wrote, against the start the marks count
// from.
func Parse(start time.Time, s string) ([]Step, error) {
	var out []Step
	if s == "" {
		return nil, nil
	}
	for _, f := range strings.Split(s, ",") {
		name, us, ok := strings.Cut(f, ":")
		var n int64
		if _, err := fmt.Sscan(us, &n); !ok || name == "" || err != nil {
			return nil, fmt.Errorf("stages: %q is not name:microseconds", f)
		}
		out = append(out, Step{Name: Name(name), At: start.Add(time.Duration(n) * time.Microsecond)})
	}
	return out, nil
}
