package operator_test

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/countersign/countersign/action"
	"github.com/countersign/countersign/internal/rigtest"
	"github.com/countersign/countersign/internal/wiring"
	"github.com/countersign/countersign/journal"
	"github.com/countersign/countersign/operator"
	"github.com/countersign/countersign/policy"
)

// heard is one event as a subscriber saw it, with the journal's last transition of
// its operation read when it arrived: an event is published after the write it
// reports, so that transition is the one the event is about.
type heard struct {
	Kind     operator.EventKind
	From, To journal.State
	Late     bool
}

func (s heard) String() string {
	late := ""
	if s.Late {
		late = " late"
	}
	return fmt.Sprintf("%s after %s->%s%s", s.Kind, s.From, s.To, late)
}

// recorder collects the events of one operator.
type recorder struct {
	mu  sync.Mutex
	got []heard
	evs []operator.Event
}

func record(t *testing.T, op *operator.Operator, j *journal.Journal) *recorder {
	t.Helper()
	r := &recorder{}
	t.Cleanup(op.Subscribe(func(ev operator.Event) {
		ts, err := j.Transitions(context.Background(), ev.Operation.ID)
		s := heard{Kind: ev.Kind, Late: ev.Late}
		if err == nil && len(ts) > 0 {
			s.From, s.To = ts[len(ts)-1].From, ts[len(ts)-1].To
		}
		r.mu.Lock()
		defer r.mu.Unlock()
		r.got, r.evs = append(r.got, s), append(r.evs, ev)
	}))
	return r
}

func (r *recorder) heardList() []heard {
	r.mu.Lock()
	defer r.mu.Unlock()
	return slices.Clone(r.got)
}

func (r *recorder) events() []operator.Event {
	r.mu.Lock()
	defer r.mu.Unlock()
	return slices.Clone(r.evs)
}

// waitFor waits until r has heard n events.
func (r *recorder) waitFor(t *testing.T, n int) []heard {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for len(r.heardList()) < n {
		if time.Now().After(deadline) {
			t.Fatalf("events = %v, want %d", r.heardList(), n)
		}
		time.Sleep(5 * time.Millisecond)
	}
	return r.heardList()
}

// sweepFor runs the operator's Sweep until the recorder has n events, and then
// for settle more (many watches, when the test asserts that none publishes again).
func sweepFor(t *testing.T, h *harness, r *recorder, n int, settle time.Duration) []heard {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() { defer close(done); h.op.Sweep(ctx) }()
	r.waitFor(t, n)
	time.Sleep(settle)
	cancel()
	<-done
	return r.heardList()
}

// sweepUntil runs the operator's Sweep until the recorder has heard an event of
// kind, and then for settle more; it fails after 10 s without one. Counting
// events is not enough where the sweep publishes others first (a late
// ApprovalNeeded before an escalation).
func sweepUntil(t *testing.T, h *harness, r *recorder, kind operator.EventKind, settle time.Duration) []heard {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() { defer close(done); h.op.Sweep(ctx) }()
	defer func() { cancel(); <-done }()
	deadline := time.Now().Add(10 * time.Second)
	for !slices.ContainsFunc(r.heardList(), func(e heard) bool { return e.Kind == kind }) {
		if time.Now().After(deadline) {
			t.Fatalf("no %s in 10 s of sweeps; heard %v", kind, r.heardList())
		}
		time.Sleep(5 * time.Millisecond)
	}
	time.Sleep(settle)
	return r.heardList()
}

func fastSweep(o *wiring.Parts) {
	o.SweepEvery, o.WatchEvery = 10*time.Millisecond, 10*time.Millisecond
}

func ev(k operator.EventKind, from, to journal.State, late bool) heard {
	return heard{Kind: k, From: from, To: to, Late: late}
}

// TestEventsOfEveryPath: every path that moves an operation publishes its events,
// after the journal write each one reports, and Late exactly for the work that ran
// outside a caller's request.
func TestEventsOfEveryPath(t *testing.T) {
	t.Parallel()
	const (
		need    = operator.ApprovalNeeded
		decided = operator.Decided
		outcome = operator.Outcome
		verify  = operator.VerificationAsked
	)
	ctx := context.Background()
	tests := []struct {
		name   string
		script []error
		// act runs the path; it returns how many events to wait for beyond those
		// of asking (the act's own, for paths that run in the background).
		act  func(t *testing.T, h *harness, r **recorder) int
		want []heard
	}{
		{"ask", nil, func(t *testing.T, h *harness, r **recorder) int {
			h.send("222", "hello")
			return 0
		}, []heard{ev(need, V, AA, false)}},
		{"auto-approve and commit", nil, func(t *testing.T, h *harness, r **recorder) int {
			h.pol.AutoApprove = []policy.AutoApprove{policyRule("commit_send_message", "333")}
			task, err := h.op.StartTask(ctx, journal.Task{Requester: operatorID, Chat: "1"})
			if err != nil {
				t.Fatal(err)
			}
			if _, err := h.op.Call(ctx, task.ID, callSend("333", "auto")); err != nil {
				t.Fatal(err)
			}
			return 0
		}, []heard{ev(decided, AA, A, false), ev(outcome, C, OK, false)}},
		{"approve and commit", nil, func(t *testing.T, h *harness, r **recorder) int {
			_, op := h.send("222", "hello")
			h.op.Decide(ctx, h.approval(op), approverID, true)
			return 0
		}, []heard{ev(need, V, AA, false), ev(decided, AA, A, false), ev(outcome, C, OK, false)}},
		{"reject", nil, func(t *testing.T, h *harness, r **recorder) int {
			_, op := h.send("222", "hello")
			h.op.Decide(ctx, h.approval(op), approverID, false)
			return 0
		}, []heard{ev(need, V, AA, false), ev(decided, AA, journal.Rejected, false), ev(outcome, AA, journal.Rejected, false)}},
		{"commit unknown", []error{unknown}, func(t *testing.T, h *harness, r **recorder) int {
			_, op := h.send("222", "hello")
			h.op.Decide(ctx, h.approval(op), approverID, true)
			return 0
		}, []heard{ev(need, V, AA, false), ev(decided, AA, A, false), ev(outcome, C, U, false)}},
		{"commit failed", []error{blocked}, func(t *testing.T, h *harness, r **recorder) int {
			_, op := h.send("222", "hello")
			h.op.Decide(ctx, h.approval(op), approverID, true)
			return 0
		}, []heard{ev(need, V, AA, false), ev(decided, AA, A, false), ev(outcome, C, F, false)}},
		{"expiry by the sweep", nil, func(t *testing.T, h *harness, r **recorder) int {
			h.send("222", "hello")
			h.clock.Advance(h.pol.ApprovalTTL + time.Second)
			return 2
		}, []heard{ev(need, V, AA, false), ev(decided, AA, journal.Expired, true), ev(outcome, AA, journal.Expired, true)}},
		{"resolved in the vault, found by the sweep", []error{unknown}, func(t *testing.T, h *harness, r **recorder) int {
			op := unknownOp(t, h, "hello")
			if _, err := h.vault.Resolve(op, true, "an editor", h.clock.Now()); err != nil {
				t.Fatal(err)
			}
			return 1
		}, []heard{ev(need, V, AA, false), ev(decided, AA, A, false), ev(outcome, C, U, false), ev(outcome, U, OK, true)}},
		{"resolve", []error{unknown}, func(t *testing.T, h *harness, r **recorder) int {
			op := unknownOp(t, h, "hello")
			if _, err := h.op.Resolve(ctx, op, false, "tester"); err != nil {
				t.Fatal(err)
			}
			return 0
		}, []heard{ev(need, V, AA, false), ev(decided, AA, A, false), ev(outcome, C, U, false), ev(outcome, U, journal.NotDelivered, false)}},
		{"cancel", nil, func(t *testing.T, h *harness, r **recorder) int {
			_, op := h.send("222", "hello")
			if _, err := h.op.Cancel(ctx, op, "tester"); err != nil {
				t.Fatal(err)
			}
			return 0
		}, []heard{ev(need, V, AA, false), ev(outcome, AA, journal.Cancelled, false)}},
		{"resumed after a restart", nil, func(t *testing.T, h *harness, r **recorder) int {
			_, op := h.send("222", "hello")
			if _, err := h.j.Decide(ctx, h.approval(op), journal.DecideApprove, approverID); err != nil {
				t.Fatal(err)
			}
			h.open() // the process stopped between the tap and the commit
			*r = record(t, h.op, h.j)
			if err := h.op.Resume(ctx); err != nil {
				t.Fatal(err)
			}
			h.op.Wait()
			return 0
		}, []heard{ev(outcome, C, OK, true)}},
		{"verification asked", []error{unknown}, func(t *testing.T, h *harness, r **recorder) int {
			op := unknownOp(t, h, "hello")
			if _, err := h.op.RequestVerification(ctx, op, "mcp:test"); err != nil {
				t.Fatal(err)
			}
			return 0
		}, []heard{ev(need, V, AA, false), ev(decided, AA, A, false), ev(outcome, C, U, false), ev(verify, C, U, false)}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			h := newHarness(t, tt.script...)
			h.edit = fastSweep
			h.open()
			r := record(t, h.op, h.j)
			if more := tt.act(t, h, &r); more > 0 {
				sweepFor(t, h, r, len(tt.want), 0)
			}
			if got := r.heardList(); fmt.Sprint(got) != fmt.Sprint(tt.want) {
				t.Errorf("events:\n got %v\nwant %v", got, tt.want)
			}
			for _, e := range r.events() {
				if e.Kind == outcome && e.Result.OperationID != e.Operation.ID {
					t.Errorf("outcome %+v carries no result of its operation", e)
				}
				if (e.Kind == need || e.Kind == decided) && e.Approval == nil {
					t.Errorf("%s without its approval", e.Kind)
				}
			}
		})
	}
}

// remote opens a second, Remote operator over the harness's journal file, as a
// stdio MCP server beside the owner would: it delivers through a sender that must
// never be called.
func remote(t *testing.T, h *harness) (*operator.Operator, *scriptSender) {
	t.Helper()
	never := &scriptSender{}
	return h.beside(rigtest.Sender(never), rigtest.Clock(h.clock), rigtest.JournalOptions(journal.WithClock(h.clock.Now)), rigtest.Parts(func(w *wiring.Parts) { w.Remote = true })).Operator, never
}

// A commit a Remote operator auto-approved is left approved, and the owner's
// watch delivers it once; the remote never sends, resumes or sweeps.
func TestTheOwnerDeliversWhatARemoteOperatorApproved(t *testing.T) {
	t.Parallel()
	h := newHarness(t)
	h.edit = fastSweep
	h.pol.AutoApprove = []policy.AutoApprove{policyRule("commit_send_message", "333")}
	h.open()
	rop, never := remote(t, h)
	ctx := context.Background()
	task, err := rop.StartTask(ctx, journal.Task{Requester: 0, Surface: "mcp"})
	if err != nil {
		t.Fatal(err)
	}
	r, err := rop.Call(ctx, task.ID, callSend("333", "from afar"))
	if err != nil || r.Status != action.StatusPending {
		t.Fatalf("remote Call = %+v, %v; want pending, handed to the owner", r, err)
	}
	if got := h.state(r.OperationID); got != A {
		t.Fatalf("state after the remote call = %s, want approved", got)
	}
	rop.Sweep(ctx) // returns at once: a remote sweeps nothing
	if err := rop.Resume(ctx); err != nil {
		t.Fatal(err)
	}
	rec := record(t, h.op, h.j)
	sweepFor(t, h, rec, 1, 0)
	if got := rec.heardList(); fmt.Sprint(got) != fmt.Sprint([]heard{ev(operator.Outcome, C, OK, true)}) {
		t.Errorf("owner's events = %v, want one late committed outcome", got)
	}
	if n := len(h.sender.Sent()); n != 1 {
		t.Errorf("owner's sends = %d, want 1", n)
	}
	if n := len(never.Sent()); n != 0 {
		t.Errorf("remote's sends = %d, want 0", n)
	}
	if got := h.states(r.OperationID); fmtStates(got) != fmtStates([]journal.State{P, V, AA, A, C, OK}) {
		t.Errorf("path = %v", got)
	}
}

// An approval a Remote operator asked for is published by the owner's watch,
// once, and marked so in the journal; one the owner asked itself is published by
// its request, marked as it was stored, and not published again.
func TestTheWatchPublishesAnotherProcesssApprovalOnce(t *testing.T) {
	t.Parallel()
	h := newHarness(t)
	h.edit = fastSweep
	h.open()
	rop, _ := remote(t, h)
	ctx := context.Background()
	rec := record(t, h.op, h.j)
	_, own := h.send("222", "asked here") // heard by its request's event
	task, err := rop.StartTask(ctx, journal.Task{Requester: 0, Surface: "mcp"})
	if err != nil {
		t.Fatal(err)
	}
	r, err := rop.Call(ctx, task.ID, callSend("222", "asked afar"))
	if err != nil || r.Status != action.StatusPending {
		t.Fatalf("remote Call = %+v, %v", r, err)
	}
	sweepFor(t, h, rec, 2, 100*time.Millisecond) // ten more watches: none may publish again
	evs := rec.events()
	if len(evs) != 2 || evs[0].Operation.ID != own ||
		evs[1].Kind != operator.ApprovalNeeded || evs[1].Operation.ID != r.OperationID ||
		evs[1].Operation.Surface != "mcp" || evs[1].Approval == nil {
		t.Errorf("events = %+v, want %s's own ApprovalNeeded, then one for %s", evs, own, r.OperationID)
	}
	mine, afar := h.latestApproval(own), h.latestApproval(r.OperationID)
	if mine.Shown.IsZero() || !mine.Shown.Equal(mine.Created) || mine.ShownBy == "" {
		t.Errorf("own approval shown %v by %q, want as it was asked (%v), by this run", mine.Shown, mine.ShownBy, mine.Created)
	}
	if afar.Shown.IsZero() || afar.ShownBy != mine.ShownBy {
		t.Errorf("remote's approval shown %v by %q, want by the watch of %q", afar.Shown, afar.ShownBy, mine.ShownBy)
	}
}

// An approval asked before any surface subscribed (a request in the instant a
// process starts, before Telegram listens) was heard by nobody: it is not marked
// shown, and the watch publishes it at once, not after showAgain.
func TestAnApprovalNobodyHeardIsPublishedByTheWatch(t *testing.T) {
	t.Parallel()
	h := newHarness(t)
	h.edit = fastSweep
	h.open()
	_, id := h.send("222", "asked before anyone listened")
	if a := h.latestApproval(id); !a.Shown.IsZero() {
		t.Fatalf("approval marked shown at %v by %q with nobody listening", a.Shown, a.ShownBy)
	}
	rec := record(t, h.op, h.j)
	sweepFor(t, h, rec, 1, 100*time.Millisecond)
	evs := rec.events()
	if len(evs) != 1 || evs[0].Kind != operator.ApprovalNeeded || evs[0].Operation.ID != id {
		t.Errorf("events = %+v, want one ApprovalNeeded for %s", evs, id)
	}
	if a := h.latestApproval(id); a.Shown.IsZero() || a.ShownBy == "" {
		t.Errorf("approval shown %v by %q, want marked by the watch", a.Shown, a.ShownBy)
	}
}

// RequestVerification is refused for an operation whose outcome is known, and a
// request recorded by another process is published by the owner's watch, once:
// asked again, by that process or the owner, within VerificationEvery, it answers
// with the first request and publishes nothing more.
func TestVerificationRequests(t *testing.T) {
	t.Parallel()
	h := newHarness(t, unknown)
	h.edit = fastSweep
	h.open()
	ctx := context.Background()
	_, pending := h.send("222", "waiting")
	if _, err := h.op.RequestVerification(ctx, pending, "mcp:test"); !errors.Is(err, operator.ErrNotResolvable) {
		t.Errorf("RequestVerification of a pending operation = %v, want ErrNotResolvable", err)
	}
	op := unknownOp(t, h, "lost")
	rop, _ := remote(t, h)
	first, err := rop.RequestVerification(ctx, op, "mcp:test")
	if err != nil || first.Repeat {
		t.Fatalf("first request = %+v, %v", first, err)
	}
	rec := record(t, h.op, h.j)
	sweepFor(t, h, rec, 1, 100*time.Millisecond)
	for name, o := range map[string]*operator.Operator{"the other process": rop, "the owner": h.op} {
		again, err := o.RequestVerification(ctx, op, "mcp:another")
		if err != nil || !again.Repeat || again.Seq != first.Seq {
			t.Errorf("asked again by %s = %+v, %v; want the first request, a repeat", name, again, err)
		}
	}
	sweepFor(t, h, rec, 1, 100*time.Millisecond)
	var asked []string
	for _, e := range rec.events() {
		if e.Kind == operator.VerificationAsked {
			asked = append(asked, e.Operation.ID)
		}
	}
	if len(asked) != 1 || asked[0] != op {
		t.Errorf("verifications published = %v, want %s once", asked, op)
	}
	if got := h.state(op); got != U {
		t.Errorf("state = %s: asking to verify must resolve nothing", got)
	}
}

// An approval that a request of this process asked for is that request's to
// publish: a pass of the sweep's watch between the journal's write and the
// request's event does not publish it too (the approval is stored marked
// shown by this run). An edit publishes the voided approval's decision before
// it asks the new one: passes of the watch run there, while a listener holds
// that event, and after the edit.
func TestTheWatchLeavesAnApprovalToTheRequestAskingIt(t *testing.T) {
	t.Parallel()
	h := newHarness(t)
	h.open()
	rec := record(t, h.op, h.j)
	_, opID := h.send("222", "helo wrld")
	apID := h.approval(opID)
	ctx := context.Background()
	var inside sync.Once
	t.Cleanup(h.op.Subscribe(func(ev operator.Event) {
		if ev.Kind == operator.Decided {
			inside.Do(func() {
				for range 3 {
					h.op.WatchOnce(ctx)
				}
			})
		}
	}))
	ed, err := h.op.Edit(ctx, apID, approverID, "hello world")
	if err != nil {
		t.Fatal(err)
	}
	for range 3 {
		h.op.WatchOnce(ctx)
	}
	var asked []string
	for _, e := range rec.events() {
		if e.Kind == operator.ApprovalNeeded {
			asked = append(asked, e.Approval.ID)
		}
	}
	want := []string{apID, ed.Approval.ID}
	if !slices.Equal(asked, want) {
		t.Errorf("ApprovalNeeded events %q, want %q: each once, by its request", asked, want)
	}
}
