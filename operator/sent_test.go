package operator_test

import (
	"context"
	"encoding/json"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/countersign/countersign/action"
	"github.com/countersign/countersign/internal/rigtest"
	"github.com/countersign/countersign/journal"
	"github.com/countersign/countersign/operator"
	"github.com/countersign/countersign/policy"
	"github.com/countersign/countersign/tools"
)

// withActsOnSent offers the tools that act on what was sent.
func withActsOnSent(h *harness) {
	for _, name := range []string{"commit_edit_message", "commit_delete_message"} {
		h.pol.Tools[name] = policy.Tool{SideEffect: policy.SideEffectCommitted, Approval: policy.ApprovalRequired}
	}
	h.open()
}

// delivered sends text to chat 222 through a tap, and returns the operation.
func (h *harness) delivered(text string) string {
	h.t.Helper()
	_, opID := h.send("222", text)
	if r, err := h.op.Decide(context.Background(), h.approval(opID), approverID, true); err != nil || r.Status != action.StatusSucceeded {
		h.t.Fatalf("Decide = %+v, %v; want delivered", r, err)
	}
	return opID
}

func (h *harness) callOn(tool string, args map[string]any) action.Result {
	h.t.Helper()
	ctx := context.Background()
	task, err := h.op.StartTask(ctx, journal.Task{Requester: operatorID, Chat: "1", Summary: tool})
	if err != nil {
		h.t.Fatal(err)
	}
	raw, _ := json.Marshal(args)
	r, err := h.op.Call(ctx, task.ID, operator.Call{Tool: tool, Args: raw})
	if err != nil {
		h.t.Fatal(err)
	}
	return r
}

// Telegram lets a bot delete a message for everyone only within 48 hours of
// sending it: a delete past that is refused before any card, by the journal's
// clock; one within it waits for its tap.
func TestADeleteIsRefusedPastTelegramsWindow(t *testing.T) {
	t.Parallel()
	h := newHarness(t)
	withActsOnSent(h)
	old := h.delivered("sent two days ago")
	h.clock.Advance(47 * time.Hour)
	recent := h.delivered("sent an hour ago")
	h.clock.Advance(time.Hour + time.Minute) // old is 48h01m old, recent 1h01m
	r := h.callOn("commit_delete_message", map[string]any{"operation_id": old})
	if r.Status != action.StatusRepairable || !strings.Contains(r.Reason, "within 48h0m0s") {
		t.Errorf("delete past the window = %+v, want a repair naming the 48 hours", r)
	}
	if r := h.callOn("commit_delete_message", map[string]any{"operation_id": recent}); r.Status != action.StatusPending {
		t.Errorf("delete within the window = %+v, want pending", r)
	}
	if n := len(h.sender.Sent()); n != 2 {
		t.Errorf("sends = %d, want the two messages only", n)
	}
}

// An edit names a message this bot sent, once; what it reads now is in the
// payload (so the approval binds to the change), and the newest edit is what
// the next one starts from.
func TestAnEditStartsFromWhatTheMessageReadsNow(t *testing.T) {
	t.Parallel()
	h := newHarness(t)
	withActsOnSent(h)
	ctx := context.Background()
	sent := h.delivered("v1")
	r := h.callOn("commit_edit_message", map[string]any{"operation_id": sent, "text": "v2"})
	if r.Status != action.StatusPending {
		t.Fatalf("edit = %+v, want pending", r)
	}
	h.clock.Advance(time.Minute)
	if d, err := h.op.Decide(ctx, h.approval(r.OperationID), approverID, true); err != nil || d.Action != "edit_message" {
		t.Fatalf("Decide = %+v, %v; want the edit made", d, err)
	}
	r = h.callOn("commit_edit_message", map[string]any{"chat_id": 222, "message_id": 101, "text": "v3"})
	op, _ := h.j.Operation(ctx, r.OperationID)
	if op.Payload.Before != "v2" || op.Payload.MessageID != 101 {
		t.Errorf("payload = %+v, want the message as the last edit left it (v2)", op.Payload)
	}
	for name, args := range map[string]map[string]any{
		"another's message": {"chat_id": 222, "message_id": 999, "text": "x"},
		"named twice":       {"operation_id": sent, "chat_id": 222, "message_id": 101, "text": "x"},
		"no message named":  {"text": "x"},
		"the same text":     {"chat_id": 222, "message_id": 101, "text": "v2"},
	} {
		if r := h.callOn("commit_edit_message", args); r.Status != action.StatusRepairable {
			t.Errorf("%s: %+v, want a repair", name, r)
		}
	}
}

// A process on the same data folder that delivers through another transport
// (the console beside the bot) finds no message of the bot's to act on: it
// would print an "edit" and journal a Telegram message as edited.
func TestAnotherTransportCannotActOnTheBotsMessages(t *testing.T) {
	t.Parallel()
	h := newHarness(t)
	withActsOnSent(h)
	sent := h.delivered("sent through Telegram")
	console := h.sibling(rigtest.Sender(h.sender), rigtest.Transport("console"))
	ctx := context.Background()
	for _, args := range []map[string]any{{"operation_id": sent, "text": "edited from the console"}, {"chat_id": 222, "message_id": 101, "text": "x"}} {
		task, err := console.StartTask(ctx, journal.Task{Requester: operatorID, Surface: "console"})
		if err != nil {
			t.Fatal(err)
		}
		raw, _ := json.Marshal(args)
		r, err := console.Call(ctx, task.ID, operator.Call{Tool: "commit_edit_message", Args: raw})
		if err != nil || r.Status != action.StatusRepairable || !strings.Contains(r.Reason, "no message this bot sent") {
			t.Errorf("console edit %v = %+v, %v; want refused: not a message it delivered", args, r, err)
		}
	}
}

// An approver's correction is held to every limit its tool's prepare applies:
// an edit is one message, and a text with a parse mode one message too. A
// correction past them was verified as a message, tapped, and refused by
// Telegram at commit, the approval spent; now it is refused at once, and the
// card's approval stands as it was.
func TestACorrectionIsHeldToEveryLimitOfItsTool(t *testing.T) {
	t.Parallel()
	long := strings.Repeat("x", tools.MaxMessageUnits+1)
	for _, tt := range []struct {
		name, tool string
		args       func(h *harness) map[string]any
		text, want string
	}{
		{"an edit past one message", "commit_edit_message",
			func(h *harness) map[string]any {
				return map[string]any{"operation_id": h.delivered("v1"), "text": "v2"}
			},
			long, "an edit is one message"},
		{"a text with a parse mode past one message", "commit_send_message",
			func(*harness) map[string]any {
				return map[string]any{"chat_id": "222", "text": "<b>hi</b>", "parse_mode": "HTML"}
			},
			long, "sent as plain text"},
		{"a secret", "commit_edit_message",
			func(h *harness) map[string]any {
				return map[string]any{"operation_id": h.delivered("v1"), "text": "v2"}
			},
			"token 123456789:AAHfiqksKZ8WmR2zSjiQ7_v4TMAKdiHm9T0", "looks like a secret"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			h := newHarness(t)
			withActsOnSent(h)
			ctx := context.Background()
			r := h.callOn(tt.tool, tt.args(h))
			if r.Status != action.StatusPending {
				t.Fatalf("%s = %+v, want pending", tt.tool, r)
			}
			apID := h.approval(r.OperationID)
			if _, err := h.op.Edit(ctx, apID, approverID, tt.text); err == nil || !strings.Contains(err.Error(), tt.want) {
				t.Fatalf("Edit = %v, want refused: %s", err, tt.want)
			}
			if got := h.approval(r.OperationID); got != apID {
				t.Errorf("after the refused correction the approval is %s, want %s as it was", got, apID)
			}
			if op, _ := h.j.Operation(ctx, r.OperationID); op.Payload.Text == tt.text {
				t.Errorf("the refused correction is in the payload")
			}
		})
	}
}

// What the approver approved still holds when it leaves: an edit, a delete or
// a copy of a message that another edit changed after the card quoted it sends
// nothing and is asked again (approved -> awaiting_approval, no attempt),
// quoting the message as it reads now and saying what changed, under a new
// hash: the approval given binds nothing any more, and the new one sends. One
// whose message a delete removed meanwhile ends failed, with nothing to act on
// and a repair to make.
func TestAChangeSinceTheCardIsAskedAgain(t *testing.T) {
	t.Parallel()
	h := newHarness(t)
	withActsOnSent(h)
	ctx := context.Background()
	sent := h.delivered("v1")
	first := h.callOn("commit_edit_message", map[string]any{"operation_id": sent, "text": "v2 from the first card"})
	second := h.callOn("commit_edit_message", map[string]any{"operation_id": sent, "text": "v3 from the second card"})
	remove := h.callOn("commit_delete_message", map[string]any{"operation_id": sent})
	for _, r := range []action.Result{first, second, remove} {
		if r.Status != action.StatusPending {
			t.Fatalf("call = %+v, want pending", r)
		}
	}
	if d, err := h.op.Decide(ctx, h.approval(second.OperationID), approverID, true); err != nil || d.Status != action.StatusSucceeded {
		t.Fatalf("the second edit = %+v, %v; want it made", d, err)
	}
	before := len(h.sender.Sent())
	change := `changed since it was approved (` + second.OperationID + `): it read "v1", it now reads "v3 from the second card"`
	for _, opID := range []string{first.OperationID, remove.OperationID} {
		given := h.approval(opID)
		asked := h.askedAgain(opID, given, change, "v3 from the second card")
		if d, err := h.op.Record(ctx, given, approverID, true); !errors.Is(err, operator.ErrDecided) || d.Approval.Decision != journal.DecideApprove {
			t.Errorf("the approval given, tapped again = %+v, %v; want refused as decided", d, err)
		}
		if opID == first.OperationID {
			if d, err := h.op.Decide(ctx, asked, approverID, true); err != nil || d.Status != action.StatusSucceeded {
				t.Fatalf("the edit approved as it reads now = %+v, %v; want it made", d, err)
			}
		}
	}
	if got := h.sender.Sent()[before:]; len(got) != 1 || got[0].Text != "v2 from the first card" {
		t.Errorf("sends after the change = %+v, want only the edit approved again", got)
	}

	// A copy quotes the message it takes from another chat: it too finds the
	// change.
	h.pol.Tools["commit_copy_message"] = policy.Tool{SideEffect: policy.SideEffectCommitted, Approval: policy.ApprovalRequired}
	h.open()
	source := h.delivered("the original")
	cp := h.callOn("commit_copy_message", map[string]any{"chat_id": "333", "operation_id": source})
	fix := h.callOn("commit_edit_message", map[string]any{"operation_id": source, "text": "the original, corrected"})
	if d, err := h.op.Decide(ctx, h.approval(fix.OperationID), approverID, true); err != nil || d.Status != action.StatusSucceeded {
		t.Fatalf("the correction = %+v, %v", d, err)
	}
	h.askedAgain(cp.OperationID, h.approval(cp.OperationID), `it now reads "the original, corrected"`, "the original, corrected")

	// A delete made since: an edit quoting the message finds it gone.
	gone := h.delivered("to be deleted")
	edit := h.callOn("commit_edit_message", map[string]any{"operation_id": gone, "text": "too late"})
	del := h.callOn("commit_delete_message", map[string]any{"operation_id": gone})
	if d, err := h.op.Decide(ctx, h.approval(del.OperationID), approverID, true); err != nil || d.Status != action.StatusSucceeded {
		t.Fatalf("delete = %+v, %v", d, err)
	}
	sends := len(h.sender.Sent())
	if d, _ := h.op.Decide(ctx, h.approval(edit.OperationID), approverID, true); d.Status != action.StatusRepairable || d.Cause != action.CauseChanged || !strings.Contains(d.Reason, "was deleted since it was approved") {
		t.Errorf("an edit of a message deleted since its card = %+v, want a repair that says it was deleted", d)
	}
	if got := h.states(edit.OperationID); got[len(got)-1] != journal.Failed || got[len(got)-2] != journal.Approved {
		t.Errorf("path = %v, want it to end approved -> failed", got)
	}
	if n := len(h.sender.Sent()); n != sends {
		t.Errorf("sends = %d, want none", n-sends)
	}
}

// askedAgain approves opID's approval given after its quoted message changed,
// and checks that nothing was tried and a new approval was asked, for the
// payload quoting the message as it reads now (now) and saying what changed
// (change), on its card too; it returns the new approval.
func (h *harness) askedAgain(opID, given, change, now string) (asked string) {
	h.t.Helper()
	ctx := context.Background()
	was, err := h.j.Operation(ctx, opID)
	if err != nil {
		h.t.Fatal(err)
	}
	d, err := h.op.Decide(ctx, given, approverID, true)
	if err != nil || d.Status != action.StatusPending || d.NextAction != action.NextAwaitApproval || d.Cause != action.CauseChanged || !strings.Contains(d.Reason, change) {
		h.t.Fatalf("approved after the change = %+v, %v; want asked again, saying %q", d, err, change)
	}
	ts, err := h.j.Transitions(ctx, opID)
	if err != nil {
		h.t.Fatal(err)
	}
	if last := ts[len(ts)-1]; last.From != journal.Approved || last.To != journal.AwaitingApproval ||
		!strings.HasPrefix(last.Reason, operator.ReasonRequoted) || !strings.Contains(last.Reason, change) {
		h.t.Errorf("last move = %+v, want approved -> awaiting_approval, %q, saying %q", last, operator.ReasonRequoted, change)
	}
	op, err := h.j.Operation(ctx, opID)
	if err != nil {
		h.t.Fatal(err)
	}
	if op.Attempts != 0 || op.Payload.Before != now || !strings.Contains(op.Payload.Requoted, change) || op.PayloadSHA256 == was.PayloadSHA256 {
		h.t.Errorf("payload asked again = %+v (%d attempts, sha256 %s, was %s); want it quoting %q, saying what changed, hashed anew, nothing tried",
			op.Payload, op.Attempts, op.PayloadSHA256, was.PayloadSHA256, now)
	}
	a, err := h.op.PendingApproval(ctx, opID)
	if err != nil || a.ID == given || a.PayloadSHA256 != op.PayloadSHA256 {
		h.t.Fatalf("approval asked again = %+v, %v; want a new one bound to the new payload", a, err)
	}
	tool, _ := h.op.Tool(op.Tool)
	if facts := strings.Join(tools.ShowOf(tool, op.Payload).Facts, "\n"); !strings.Contains(facts, "Asked again: approved before, but ") || !strings.Contains(facts, change) {
		h.t.Errorf("card's facts = %q, want them to say what changed", facts)
	}
	return a.ID
}
