package operator_test

import (
	"context"
	"encoding/json"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/countersign/countersign/action"
	"github.com/countersign/countersign/internal/pgtest"
	"github.com/countersign/countersign/internal/rigtest"
	"github.com/countersign/countersign/internal/syncbuf"
	"github.com/countersign/countersign/internal/wiring"
	"github.com/countersign/countersign/journal"
	"github.com/countersign/countersign/operator"
	"github.com/countersign/countersign/policy"
	"github.com/countersign/countersign/tools"
	"github.com/countersign/countersign/vault"
)

// fakeClock advances by exactly what it is asked to sleep, and records each wait.
type fakeClock struct {
	mu    sync.Mutex
	now   time.Time
	waits []time.Duration
	// onSleep, when set, runs at the start of every Sleep (a test ends the context
	// there to stand for a process that dies while it waits).
	onSleep func()
	// onNow, when set, runs at the start of every Now: a test makes another
	// process act at a point of this one's work.
	onNow atomic.Pointer[func()]
}

func newClock() *fakeClock {
	return &fakeClock{now: time.Date(2026, 11, 30, 9, 15, 0, 0, time.UTC)}
}

func (c *fakeClock) Now() time.Time {
	if f := c.onNow.Load(); f != nil {
		(*f)()
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.now
}

func (c *fakeClock) Sleep(ctx context.Context, d time.Duration) error {
	if c.onSleep != nil {
		c.onSleep()
	}
	if err := ctx.Err(); err != nil {
		return err
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	c.waits = append(c.waits, d)
	if d > 0 {
		c.now = c.now.Add(d)
	}
	return nil
}

func (c *fakeClock) Advance(d time.Duration) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.now = c.now.Add(d)
}

func (c *fakeClock) Waits() []time.Duration {
	c.mu.Lock()
	defer c.mu.Unlock()
	return append([]time.Duration(nil), c.waits...)
}

// scriptSender is the world's edge for these tests: it answers each send with the
// next scripted error (nil is a delivery) and records what it was asked to send.
// After the script it repeats the last entry, so "every 429" is one entry.
type scriptSender struct {
	mu     sync.Mutex
	script []error
	sent   []tools.Message
	// delivered, when set, runs after each message the service accepted, before
	// the sender returns (a test fills the disk there).
	delivered func()
}

func (s *scriptSender) Send(ctx context.Context, m tools.Message) (tools.Delivery, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.sent = append(s.sent, m)
	var err error
	if n := len(s.sent) - 1; n < len(s.script) {
		err = s.script[n]
	} else if len(s.script) > 0 {
		err = s.script[len(s.script)-1]
	}
	if err != nil {
		return tools.Delivery{}, err
	}
	if s.delivered != nil {
		s.delivered()
	}
	return tools.Delivery{ChatID: m.Target, MessageID: int64(100 + len(s.sent))}, nil
}

// Edit makes an edit the next scripted answer, as Send does.
func (s *scriptSender) Edit(ctx context.Context, e tools.Edit) (tools.Delivery, error) {
	return s.Send(ctx, tools.Message{Target: e.Target, Text: e.Text, ParseMode: e.ParseMode})
}

// Delete makes a delete the next scripted answer, as Send does.
func (s *scriptSender) Delete(ctx context.Context, target string, id int64) error {
	_, err := s.Send(ctx, tools.Message{Target: target})
	return err
}

func (s *scriptSender) Sent() []tools.Message {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]tools.Message(nil), s.sent...)
}

const (
	operatorID = 1
	approverID = 2
	strangerID = 3
)

// harness is a process of the operator's tests: a rig (internal/rigtest) wired
// as the binary wires it, verifier and vault included, over a sender that
// answers from a script and a clock that moves only when asked, with retry
// waits that have no jitter. open starts the process again on the same journal.
type harness struct {
	t        *testing.T
	dir      string // the rig's data folder
	file     string // the journal: a file in dir, or a PostgreSQL URL
	vaultDir string // the vault, in the test's folder whatever the journal
	clock    *fakeClock
	sender   *scriptSender
	pol      *policy.Policy
	vault    *vault.Vault
	logs     syncBuffer
	j        *journal.Journal
	op       *operator.Operator
	// edit, when set, changes the wiring's parts on every open (the sweep's
	// periods, Observe).
	edit func(*wiring.Parts)
}

func testPolicy(t testing.TB) *policy.Policy {
	t.Helper()
	p, err := policy.Load("../policies.yaml")
	if err != nil {
		t.Fatal(err)
	}
	p.Access = policy.Access{Operators: []policy.UserID{operatorID}, Approvers: []policy.UserID{operatorID, approverID}}
	return p
}

func newHarness(t *testing.T, script ...error) *harness {
	t.Helper()
	dir := t.TempDir()
	h := &harness{t: t, dir: dir, file: filepath.Join(dir, "journal.db"), vaultDir: filepath.Join(dir, "vault"), clock: newClock(),
		sender: &scriptSender{script: script}, pol: testPolicy(t)}
	if os.Getenv("COUNTERSIGN_OPERATOR_JOURNAL") == "postgres" {
		h.file = pgtest.Fresh(t) // the whole operator suite on PostgreSQL
	}
	h.open()
	return h
}

// transport is what the harness's sender delivers through.
const transport = "telegram"

// open (re)opens the journal, owns its sending and builds an operator over it, as a
// process start does, with the vault in vaultDir. The process before it is gone:
// its journal is closed, which releases its ownership as a process's death would.
func (h *harness) open() {
	h.t.Helper()
	if h.j != nil {
		h.j.Close()
	}
	v, err := vault.Open(h.vaultDir)
	if err != nil {
		h.t.Fatal(err)
	}
	rig := rigtest.New(h.t, rigtest.Dir(h.dir), rigtest.Journal(h.file), rigtest.JournalOptions(journal.WithClock(h.clock.Now)),
		rigtest.Owning(), rigtest.Policy(h.pol), rigtest.Sender(h.sender), rigtest.Clock(h.clock),
		rigtest.Parts(func(w *wiring.Parts) {
			w.Vault, w.Rand, w.Logger = v, func() float64 { return 0.5 }, slog.New(slog.NewTextHandler(&h.logs, nil))
			if h.edit != nil {
				h.edit(w)
			}
		}))
	h.j, h.op, h.vault = rig.Journal, rig.Operator, v
}

func sendArgs(chat, text string) json.RawMessage {
	b, _ := json.Marshal(tools.SendArgs{ChatID: chat, Text: text})
	return b
}

// send starts a task and calls commit_send_message; it must end pending.
func (h *harness) send(chat, text string) (taskID, opID string) {
	h.t.Helper()
	ctx := context.Background()
	task, err := h.op.StartTask(ctx, journal.Task{Requester: operatorID, Chat: "1", Summary: "send"})
	if err != nil {
		h.t.Fatal(err)
	}
	r, err := h.op.Call(ctx, task.ID, operator.Call{Tool: "commit_send_message", Args: sendArgs(chat, text)})
	if err != nil {
		h.t.Fatal(err)
	}
	if r.Status != action.StatusPending {
		h.t.Fatalf("Call = %+v, want pending", r)
	}
	return task.ID, r.OperationID
}

func (h *harness) approval(opID string) string {
	h.t.Helper()
	a, err := h.op.PendingApproval(context.Background(), opID)
	if err != nil {
		h.t.Fatal(err)
	}
	return a.ID
}

// sibling builds another operator over the harness's journal, wired as the
// binary wires one: another surface of the same process (the console beside the
// bot), or the same process with another sender. It has the harness's policy,
// clock and vault, and a sender that sends nothing, unless opts say otherwise.
func (h *harness) sibling(opts ...rigtest.Option) *operator.Operator {
	h.t.Helper()
	base := []rigtest.Option{rigtest.Over(h.j), rigtest.Dir(h.dir), rigtest.Policy(h.pol), rigtest.Clock(h.clock),
		rigtest.Sender(&scriptSender{}), rigtest.Parts(func(w *wiring.Parts) { w.Vault = h.vault })}
	return rigtest.New(h.t, append(base, opts...)...).Operator
}

// beside builds another process on the harness's data folder
// (a journal of its own on the same file, the same vault folder), wired as the
// binary wires one: a stdio `countersign mcp` beside the bot. It has the
// harness's policy and a sender that sends nothing, on its own clock, unless
// opts say otherwise.
func (h *harness) beside(opts ...rigtest.Option) *rigtest.Rig {
	h.t.Helper()
	base := []rigtest.Option{rigtest.Journal(h.file), rigtest.Dir(h.dir), rigtest.Policy(h.pol), rigtest.Sender(&scriptSender{})}
	return rigtest.New(h.t, append(base, opts...)...)
}

// latestApproval is the approval opID asked for last, as journaled.
func (h *harness) latestApproval(opID string) journal.Approval {
	h.t.Helper()
	a, err := h.j.LatestApproval(context.Background(), opID)
	if err != nil {
		h.t.Fatal(err)
	}
	return a
}

// path returns the operation's states in the order the audit log recorded them.
func (h *harness) states(opID string) []journal.State {
	h.t.Helper()
	ts, err := h.j.Transitions(context.Background(), opID)
	if err != nil {
		h.t.Fatal(err)
	}
	var states []journal.State
	for _, tr := range ts {
		states = append(states, tr.To)
	}
	return states
}

func (h *harness) state(opID string) journal.State {
	h.t.Helper()
	op, err := h.j.Operation(context.Background(), opID)
	if err != nil {
		h.t.Fatal(err)
	}
	return op.State
}

func fmtStates(s []journal.State) string { return fmt.Sprint(s) }

func callSend(chat, text string) operator.Call {
	return operator.Call{Tool: "commit_send_message", Args: sendArgs(chat, text)}
}

func policyRule(tool string, chats ...string) policy.AutoApprove {
	return policy.AutoApprove{Tool: tool, Chats: chats}
}

func mustRegistry(t *testing.T, h *harness) *tools.Registry {
	t.Helper()
	reg, err := tools.NewRegistry(h.pol, h.sender)
	if err != nil {
		t.Fatal(err)
	}
	return reg
}

// syncBuffer is a log sink safe across goroutines.
type syncBuffer = syncbuf.Buffer

// onOutcome calls fn with every late Outcome event op publishes: the work it
// finished on its own (Resume, the sweep), as a surface hears it.
func onOutcome(op *operator.Operator, fn func(id string, r action.Result)) {
	op.Subscribe(func(ev operator.Event) {
		if ev.Kind == operator.Outcome && ev.Late {
			fn(ev.Operation.ID, ev.Result)
		}
	})
}
