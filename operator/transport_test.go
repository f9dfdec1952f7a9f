package operator_test

import (
	"context"
	"encoding/json"
	"errors"
	"log/slog"
	"slices"
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

// Defect 1: the console and the bot share a data folder. An operation made for
// Telegram may be shown by the console but never committed by it: its printer
// must not make the journal say "committed" for a message that never reached
// Telegram.
func TestAnotherTransportNeverCommitsAnOperation(t *testing.T) {
	t.Parallel()
	h := newHarness(t, nil)
	ctx := context.Background()
	_, approved := h.send("222", "approved in Telegram")
	// The tap is recorded; the bot stops before it sends.
	if _, err := h.j.Decide(ctx, h.approval(approved), journal.DecideApprove, approverID); err != nil {
		t.Fatal(err)
	}
	_, waiting := h.send("222", "still waiting for a tap")
	before := len(h.sender.Sent())

	printer := &scriptSender{}
	console := h.sibling(rigtest.Sender(printer), rigtest.Transport("console"), rigtest.Parts(func(w *wiring.Parts) { w.Logger = slog.New(slog.NewTextHandler(&h.logs, nil)) }))
	if err := console.Resume(ctx); err != nil {
		t.Fatal(err)
	}
	console.Wait()
	if _, err := console.Decide(ctx, h.approval(waiting), approverID, true); !errors.Is(err, operator.ErrOtherTransport) {
		t.Errorf("the console deciding a Telegram approval = %v, want ErrOtherTransport", err)
	}
	if _, err := console.Continue(ctx, approved); !errors.Is(err, operator.ErrOtherTransport) {
		t.Errorf("the console continuing a Telegram operation = %v, want ErrOtherTransport", err)
	}
	if n := len(printer.Sent()); n != 0 {
		t.Errorf("the console's printer was asked to send %d Telegram messages, want 0", n)
	}
	if got := h.state(approved); got != journal.Approved {
		t.Errorf("the approved Telegram operation is %s after the console came and went, want approved", got)
	}
	if got := h.state(waiting); got != journal.AwaitingApproval {
		t.Errorf("the waiting Telegram operation is %s, want awaiting_approval", got)
	}
	// The bot, on its next start, sends what is its own, once.
	h.open()
	if err := h.op.Resume(ctx); err != nil {
		t.Fatal(err)
	}
	h.op.Wait()
	if got := h.state(approved); got != journal.Committed || len(h.sender.Sent()) != before+1 {
		t.Errorf("after the bot's restart: %s with %d sends, want committed with one more send", got, len(h.sender.Sent())-before)
	}
}

// Defect 4: two commits of one task that fail at once both want a retry. The
// budget is paid in the move that schedules each retry, so neither loses a race
// it cannot see, and neither is left in committing.
func TestRacingRetriesOfOneTaskNeverStrandACommit(t *testing.T) {
	t.Parallel()
	h := newHarness(t)
	h.pol.AutoApprove = append(h.pol.AutoApprove, policyRule("commit_send_message", "222"))
	gate := &barrierSender{n: 2, first: rateLimited(0)}
	op := newOperatorWith(t, h, gate)
	ctx := context.Background()
	task, err := op.StartTask(ctx, journal.Task{Requester: operatorID, Chat: "1", Summary: "two sends"})
	if err != nil {
		t.Fatal(err)
	}
	results := make(chan action.Result, 2)
	for _, text := range []string{"first of two", "second of two"} {
		go func() {
			r, err := op.Call(ctx, task.ID, callSend("222", text))
			if err != nil {
				t.Error(err)
			}
			results <- r
		}()
	}
	for range 2 {
		r := <-results
		if got := h.state(r.OperationID); got != journal.Committed {
			t.Errorf("%s ended %s (%+v), want committed", r.OperationID, got, r)
		}
		if path := h.states(r.OperationID); !slices.Contains(path, journal.RetryWait) {
			t.Errorf("%s took %v, want a scheduled retry on the way", r.OperationID, fmtStates(path))
		}
	}
	if got, _ := h.j.Task(ctx, task.ID); got.RetriesUsed != 2 {
		t.Errorf("retries used = %d, want 2 (one per operation)", got.RetriesUsed)
	}
}

// barrierSender holds its first n sends until all n have arrived, answers them
// with first, and delivers every later one: n commits that fail at the same moment.
type barrierSender struct {
	n     int
	first error
	mu    sync.Mutex
	calls int
	all   chan struct{}
}

func (b *barrierSender) Send(ctx context.Context, m tools.Message) (tools.Delivery, error) {
	b.mu.Lock()
	if b.all == nil {
		b.all = make(chan struct{})
	}
	b.calls++
	call, all := b.calls, b.all
	if call == b.n {
		close(all)
	}
	b.mu.Unlock()
	if call > b.n {
		return tools.Delivery{ChatID: m.Target, MessageID: int64(call)}, nil
	}
	select {
	case <-all:
	case <-ctx.Done():
		return tools.Delivery{}, ctx.Err()
	}
	return tools.Delivery{}, b.first
}

// A retry is a send: another transport may not ask for one, even of an operation
// a person verified was not delivered.
func TestAnotherTransportCannotRetry(t *testing.T) {
	t.Parallel()
	h := newHarness(t, unknown)
	ctx := context.Background()
	opID := unknownOp(t, h, "verified not delivered")
	if _, err := h.op.Resolve(ctx, opID, false, "@alice"); err != nil {
		t.Fatal(err)
	}
	console := h.sibling(rigtest.Transport("console"))
	if _, err := console.Retry(ctx, opID); !errors.Is(err, operator.ErrOtherTransport) {
		t.Errorf("the console retrying a Telegram operation = %v, want ErrOtherTransport", err)
	}
	if got := h.state(opID); got != journal.NotDelivered {
		t.Errorf("state = %s, want not_delivered, untouched", got)
	}
}

// A call refused before it was prepared and cut off between its record and its
// refusal has no payload: continuing it must not put an empty text before anyone.
func TestContinueLeavesAnEmptyRecordAlone(t *testing.T) {
	t.Parallel()
	h := newHarness(t)
	ctx := context.Background()
	task, err := h.op.StartTask(ctx, journal.Task{Requester: operatorID, Chat: "1", Summary: "send"})
	if err != nil {
		t.Fatal(err)
	}
	op, err := h.j.CreateOperation(ctx, journal.Operation{TaskID: task.ID, Tool: "commit_send_message", Fingerprint: "fp",
		Surface: transport, Transport: transport}, "call received")
	if err != nil {
		t.Fatal(err)
	}
	r, err := h.op.Continue(ctx, op.ID)
	if err != nil || r.Status != action.StatusTerminal || r.NextAction != action.NextStop {
		t.Errorf("Continue = %+v, %v; want a stop, no approval asked", r, err)
	}
	if got := h.state(op.ID); got != journal.Failed {
		t.Errorf("state = %s, want failed: the refusal it was on its way to", got)
	}
	if _, err := h.op.PendingApproval(ctx, op.ID); !errors.Is(err, journal.ErrNotFound) {
		t.Errorf("an approval was asked for an empty record: %v", err)
	}
}

// A model's turn drafts with prepare_reply, then the process stops before the turn
// ends: the replayed update continues the task's operations, and the draft among
// them is finished, not an operation waiting on an approval it never had.
func TestContinueFindsADraftFinished(t *testing.T) {
	t.Parallel()
	h := newHarness(t)
	ctx := context.Background()
	task, err := h.op.StartTask(ctx, journal.Task{Requester: operatorID, Chat: "1", Summary: "chat"})
	if err != nil {
		t.Fatal(err)
	}
	made, err := h.op.Call(ctx, task.ID, operator.Call{Tool: "prepare_reply", Args: json.RawMessage(`{"text":"a draft"}`)})
	if err != nil {
		t.Fatal(err)
	}
	h.open() // the process stops and starts again
	r, err := h.op.Continue(ctx, made.OperationID)
	if err != nil || r.Status != action.StatusSucceeded || r.SideEffect != action.SideEffectNone || r.NextAction != action.NextNone || r.Draft != "a draft" {
		t.Errorf("Continue(draft) = %+v, %v; want the draft, succeeded, as Call gave it (%+v)", r, err, made)
	}
	if got := h.state(made.OperationID); got != journal.Prepared {
		t.Errorf("state = %s, want prepared: a draft moves nowhere", got)
	}
}

// An owner's sweep expires only its own transport's approvals: a console
// approval past its expiry is the console's to expire (and to tell its person
// about), not the bot's, and stays pending after the bot's sweep.
func TestAnOwnerExpiresOnlyItsOwnTransportsApprovals(t *testing.T) {
	t.Parallel()
	h := newHarness(t)
	ctx := context.Background()
	_, ours := h.send("222", "the bot's, to expire")
	console := h.sibling(rigtest.Sender(h.sender), rigtest.Transport("console"), rigtest.Parts(func(w *wiring.Parts) { w.Logger = slog.New(slog.NewTextHandler(&h.logs, nil)) }))
	task, err := console.StartTask(ctx, journal.Task{Requester: operatorID, Surface: "console"})
	if err != nil {
		t.Fatal(err)
	}
	r, err := console.Call(ctx, task.ID, callSend("222", "the console's, not the bot's"))
	if err != nil || r.Status != action.StatusPending {
		t.Fatalf("console call = %+v, %v", r, err)
	}
	theirs := r.OperationID
	h.clock.Advance(h.pol.ApprovalTTL + time.Minute)
	sweep(t, h.op)
	waitUntil(t, "the bot's sweep expired its own approval", func() bool { return h.state(ours) == journal.Expired })
	if got := h.state(theirs); got != journal.AwaitingApproval {
		t.Errorf("the console's approval after the bot's sweep: %s, want awaiting_approval", got)
	}
	if a := h.latestApproval(theirs); a.Decision != journal.Pending {
		t.Errorf("the console's approval was decided %q by the bot's sweep, want it pending: the expiry is decided in one statement, before either operation moves", a.Decision)
	}
}
