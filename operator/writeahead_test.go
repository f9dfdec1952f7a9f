package operator_test

import (
	"context"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/countersign/countersign/action"
	"github.com/countersign/countersign/internal/rigtest"
	"github.com/countersign/countersign/internal/wiring"
	"github.com/countersign/countersign/journal"
	"github.com/countersign/countersign/operator"
	"github.com/countersign/countersign/tools"
)

// seen is what a second process reading the journal file found at the moment a
// request left: the operation's state and how many attempts it had opened.
type seen struct {
	state    journal.State
	attempts int
}

// peekingSender answers like scriptSender, and before each answer reads the
// operation being sent from its own connection to the journal file, as another
// process would: what it finds is what a kill -9 at that instant would leave.
type peekingSender struct {
	scriptSender
	reader *journal.Journal
	mu     sync.Mutex
	seen   []seen
	err    error
}

func (p *peekingSender) Send(ctx context.Context, m tools.Message) (tools.Delivery, error) {
	ops, err := p.reader.Operations(ctx, journal.Filter{Target: "222"})
	p.mu.Lock()
	switch {
	case err != nil:
		p.err = err
	case len(ops) == 0:
		p.err = fmt.Errorf("no operation to 222 in the journal while sending %q", m.Text)
	default:
		p.seen = append(p.seen, seen{ops[0].State, ops[0].Attempts})
	}
	p.mu.Unlock()
	return p.scriptSender.Send(ctx, m)
}

// TestCommittingIsDurableBeforeTheRequestLeaves: whatever path a commit takes (a
// first attempt, a scheduled retry, a repair by schema, the second part of a long
// text), the journal on disk says committing, with the attempt opened, before the
// request leaves the process. A process killed mid-send therefore always comes back
// to a commit it cannot know, never to an approved one it would send again.
func TestCommittingIsDurableBeforeTheRequestLeaves(t *testing.T) {
	t.Parallel()
	long := strings.Repeat("word ", tools.MaxMessageUnits/5+10)
	tests := []struct {
		name   string
		script []error
		text   string
		want   []seen
	}{
		{"first attempt", nil, "hello", []seen{{C, 1}}},
		{"retry after a 429", []error{rateLimited(time.Second), nil}, "hello", []seen{{C, 1}, {C, 2}}},
		{"repair by schema", []error{migrated, nil}, "hello", []seen{{C, 1}, {C, 2}}},
		{"second part of a long text", nil, long, []seen{{C, 1}, {C, 2}}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			h := newHarness(t)
			reader, err := journal.Open(context.Background(), h.file)
			if err != nil {
				t.Fatal(err)
			}
			t.Cleanup(func() { reader.Close() })
			peek := &peekingSender{scriptSender: scriptSender{script: tt.script}, reader: reader}
			h.op = newOperatorWith(t, h, peek)
			_, opID := h.send("222", tt.text)
			r, err := h.op.Decide(context.Background(), h.approval(opID), approverID, true)
			if err != nil || r.Status != action.StatusSucceeded {
				t.Fatalf("Decide = %+v, %v; want succeeded", r, err)
			}
			if peek.err != nil {
				t.Fatal(peek.err)
			}
			if fmt.Sprint(peek.seen) != fmt.Sprint(tt.want) {
				t.Errorf("journal as each request left = %v, want %v (state, attempts opened)", peek.seen, tt.want)
			}
		})
	}
}

// newOperatorWith builds the harness's operator over another sender.
func newOperatorWith(t *testing.T, h *harness, s tools.Sender) *operator.Operator {
	t.Helper()
	return h.sibling(rigtest.Sender(s), rigtest.Parts(func(w *wiring.Parts) { w.Rand = func() float64 { return 0.5 } }))
}

// shutdownSender stands for the bot being stopped while a request is on the wire:
// the first send ends the process's context (SIGTERM arrives) and then answers as
// Telegram's sender does, by its context: a request whose context ended after it
// was written has an unknown outcome; one that was let finish is delivered.
type shutdownSender struct {
	scriptSender
	stop func()
}

func (s *shutdownSender) Send(ctx context.Context, m tools.Message) (tools.Delivery, error) {
	s.stop()
	if err := ctx.Err(); err != nil {
		s.scriptSender.Send(ctx, m) // counted: it left the process
		return tools.Delivery{}, fmt.Errorf("%w after the request was written: %w", err, tools.ErrOutcomeUnknown)
	}
	return s.scriptSender.Send(ctx, m)
}

// TestARequestThatStartedLeavingFinishesAtShutdown: a retry resumed after a restart
// is on the wire when the bot is told to stop. The request is let finish and its
// outcome is journaled (committing -> committed), not cut into an unknown outcome,
// nor left in committing for the next start to call unknown.
func TestARequestThatStartedLeavingFinishesAtShutdown(t *testing.T) {
	t.Parallel()
	h := newHarness(t, rateLimited(40*time.Second))
	ctx, cancel := context.WithCancel(context.Background())
	_, opID := h.send("222", "hello")
	h.clock.onSleep = cancel // the first process dies during its wait
	if _, err := h.op.Decide(ctx, h.approval(opID), approverID, true); err == nil {
		t.Fatal("Decide with a dying process ended, want it cut short in the wait")
	}
	if got := h.state(opID); got != RW {
		t.Fatalf("state = %s, want retry_wait", got)
	}
	h.clock.onSleep = nil
	h.open()

	run, shutdown := context.WithCancel(context.Background())
	defer shutdown()
	sender := &shutdownSender{stop: shutdown}
	done := make(chan action.Result, 1)
	h.op = h.sibling(rigtest.Sender(sender))
	onOutcome(h.op, func(_ string, r action.Result) { done <- r })
	if err := h.op.Resume(run); err != nil {
		t.Fatal(err)
	}
	h.op.Wait()
	if n := len(sender.Sent()); n != 1 {
		t.Fatalf("sends after the restart = %d, want 1", n)
	}
	if p := h.states(opID); fmtStates(p[len(p)-3:]) != fmtStates([]journal.State{RW, C, OK}) {
		t.Errorf("path = %v, want it to end retry_wait, committing, committed", p)
	}
	select {
	case r := <-done:
		if r.Status != action.StatusSucceeded || r.Evidence == nil {
			t.Errorf("reported = %+v, want the delivery with its evidence", r)
		}
	default:
		t.Error("the finished delivery was reported to nobody")
	}
}
