package operator_test

import (
	"context"
	"strings"
	"sync"
	"testing"

	"github.com/countersign/countersign/action"
	"github.com/countersign/countersign/internal/rigtest"
	"github.com/countersign/countersign/journal"
)

// TestPingPongCountsAnUnknownOutcome: a call whose outcome is unknown went wrong as
// far as the loop guard knows. A to a chat meets an unknown outcome, B to another
// is refused, A again is stopped (its first may have arrived), and B again would
// complete two rounds of the bounce: it stops too, and is not sent.
func TestPingPongCountsAnUnknownOutcome(t *testing.T) {
	t.Parallel()
	h := newHarness(t, unknown, blocked)
	withLoopGuard(t, h, "loop_guard:\n  failures: 3\n  ping_pong: 2", "222", "333")
	ctx := context.Background()
	taskID := newTask(t, h)
	a, _ := h.op.Call(ctx, taskID, callSend("222", "hello"))
	if a.SideEffect != action.SideEffectUnknown {
		t.Fatalf("A = %+v, want an unknown outcome", a)
	}
	if b, _ := h.op.Call(ctx, taskID, callSend("333", "hello")); b.NextAction != action.NextStop || b.Cause == action.CauseDoomLoop {
		t.Fatalf("B = %+v, want the sender's refusal", b)
	}
	r, err := h.op.Call(ctx, taskID, callSend("222", "hello"))
	wantDoomLoop(t, r, err, a.OperationID, "unknown")
	r, err = h.op.Call(ctx, taskID, callSend("333", "hello"))
	wantDoomLoop(t, r, err, `commit_send_message(chat_id: "333", text: "hello")`, "alternating", "2 rounds")
	if n := len(h.sender.Sent()); n != 2 {
		t.Errorf("sends = %d, want 2", n)
	}
}

// TestVerifierCountsAnUnknownOutcomeAsSent: the verifier's duplicate check, fed by
// the real journal, sees a text whose outcome is unknown as one that may have
// arrived: the same text to the same chat in another task stops before any card.
func TestVerifierCountsAnUnknownOutcomeAsSent(t *testing.T) {
	t.Parallel()
	h := newHarness(t, unknown)
	ctx := context.Background()
	first := unknownOp(t, h, "Weekly digest is out")
	task, err := h.op.StartTask(ctx, journal.Task{Requester: operatorID, Chat: "1", Summary: "again"})
	if err != nil {
		t.Fatal(err)
	}
	r, err := h.op.Call(ctx, task.ID, callSend("222", "Weekly digest is out"))
	if err != nil {
		t.Fatal(err)
	}
	if r.NextAction != action.NextStop || !strings.Contains(r.Reason, first) {
		t.Errorf("the same text again = %+v, want a stop naming %s", r, first)
	}
	if p := h.states(r.OperationID); fmtStates(p) != fmtStates([]journal.State{P, F}) {
		t.Errorf("path = %v, want [prepared failed]", p)
	}
	if n := len(h.sender.Sent()); n != 1 {
		t.Errorf("sends = %d, want 1", n)
	}
}

// TestRecoveredCommitIsReportedToItsRequester: the owner's start moves a commit a
// dead process left committing to unknown, and Resume tells whoever asked, with the
// way to resolve it; an operation that was unknown before the crash is not
// reported again at every start.
func TestRecoveredCommitIsReportedToItsRequester(t *testing.T) {
	t.Parallel()
	h := newHarness(t, unknown)
	ctx := context.Background()
	before := unknownOp(t, h, "unknown before the crash")
	_, opID := h.send("222", "on the wire at the crash")
	if _, err := h.j.Decide(ctx, h.approval(opID), journal.DecideApprove, approverID); err != nil {
		t.Fatal(err)
	}
	if err := h.j.Move(ctx, opID, journal.Move{From: A, To: C, Reason: "attempt 1", StartAttempt: true}); err != nil {
		t.Fatal(err)
	}
	h.open()
	told := map[string]action.Result{}
	h.op = h.sibling(rigtest.Sender(h.sender))
	var mu sync.Mutex
	onOutcome(h.op, func(id string, r action.Result) { mu.Lock(); told[id] = r; mu.Unlock() })
	if err := h.op.Resume(ctx); err != nil {
		t.Fatal(err)
	}
	h.op.Wait()
	r, ok := told[opID]
	if !ok || r.SideEffect != action.SideEffectUnknown || r.NextAction != action.NextVerify || !strings.Contains(r.Reason, "/resolve "+opID) {
		t.Errorf("told %+v (%v), want the unknown outcome of %s with how to resolve it", r, ok, opID)
	}
	if _, again := told[before]; again {
		t.Errorf("%s, unknown before the crash, was reported again", before)
	}
	if op, _ := h.j.Operation(ctx, opID); op.Result == nil || op.Result.NextAction != action.NextVerify {
		t.Errorf("journaled result = %+v, want the unknown outcome", op.Result)
	}
	if n := len(h.sender.Sent()); n != 1 {
		t.Errorf("sends = %d, want 1 (the one before the crash)", n)
	}
}
