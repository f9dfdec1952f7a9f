package operator_test

import (
	"context"
	"errors"
	"testing"

	"github.com/countersign/countersign/internal/rigtest"
	"github.com/countersign/countersign/journal"
	"github.com/countersign/countersign/operator"
)

// TestProceedRefusesAnotherTransportsOperation: a decision recorded for a Telegram
// operation and handed to the console's operator to carry out is refused there;
// the console's printer sends nothing and the operation waits for its own process.
func TestProceedRefusesAnotherTransportsOperation(t *testing.T) {
	t.Parallel()
	h := newHarness(t)
	ctx := context.Background()
	_, opID := h.send("222", "approved in Telegram")
	d, err := h.op.Record(ctx, h.approval(opID), approverID, true)
	if err != nil || !d.Approved() {
		t.Fatalf("Record = %+v, %v; want approved", d, err)
	}
	printer := &scriptSender{}
	console := h.sibling(rigtest.Sender(printer), rigtest.Transport("console"))
	if _, err := console.Proceed(ctx, d); !errors.Is(err, operator.ErrOtherTransport) {
		t.Errorf("the console carrying out a Telegram decision = %v, want ErrOtherTransport", err)
	}
	if n := len(printer.Sent()); n != 0 {
		t.Errorf("the console's printer sent %d messages, want 0", n)
	}
	if got := h.state(opID); got != journal.Approved {
		t.Errorf("state = %s, want approved, left to Telegram", got)
	}
}

// TestApproverAddedLaterIsNotAnApproverOfAnOlderTask: someone added to the
// approver list after a task started may not decide that task's requests.
func TestApproverAddedLaterIsNotAnApproverOfAnOlderTask(t *testing.T) {
	t.Parallel()
	h := newHarness(t)
	ctx := context.Background()
	_, opID := h.send("222", "hello")
	const newcomer = 9
	h.pol.Access.Approvers = append(h.pol.Access.Approvers, newcomer)
	h.open()
	if _, err := h.op.Decide(ctx, h.approval(opID), newcomer, true); !errors.Is(err, operator.ErrNotApprover) {
		t.Errorf("a newcomer's approval = %v, want ErrNotApprover", err)
	}
	if got := h.state(opID); got != journal.AwaitingApproval || len(h.sender.Sent()) != 0 {
		t.Errorf("after the newcomer: %s with %d sends, want awaiting_approval and none", got, len(h.sender.Sent()))
	}
	// A task started after the edit is theirs to decide.
	_, fresh := h.send("222", "hello again")
	if _, err := h.op.Decide(ctx, h.approval(fresh), newcomer, true); err != nil {
		t.Errorf("the newcomer on a new task: %v", err)
	}
}
