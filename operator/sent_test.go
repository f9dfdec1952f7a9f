package operator_test

import (
	"context"
	"encoding/json"
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

// What the approver approved still holds when it leaves: an edit or a delete
// of a message that another edit changed, or a delete removed, after the card
// quoted it sends nothing, ends failed with the change in words and a repair
// to make, and the path is approved -> failed, with no attempt.
func TestAChangeSinceTheCardSendsNothing(t *testing.T) {
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
	for _, c := range []struct {
		op, want string
	}{
		{first.OperationID, `changed since it was approved (` + second.OperationID + `): it read "v1", it now reads "v3 from the second card"`},
		{remove.OperationID, `changed since it was approved (` + second.OperationID + `)`},
	} {
		d, err := h.op.Decide(ctx, h.approval(c.op), approverID, true)
		if err != nil || d.Status != action.StatusRepairable || d.Cause != action.CauseChanged || !strings.Contains(d.Reason, c.want) {
			t.Errorf("approved after the change: %+v, %v; want a repair that says %q", d, err, c.want)
		}
		if got := h.states(c.op); got[len(got)-1] != journal.Failed || got[len(got)-2] != journal.Approved {
			t.Errorf("path = %v, want it to end approved -> failed", got)
		}
		if op, _ := h.j.Operation(ctx, c.op); op.Attempts != 0 {
			t.Errorf("attempts = %d, want 0: nothing was tried", op.Attempts)
		}
	}
	if n := len(h.sender.Sent()); n != before {
		t.Errorf("sends after the change = %d, want none", n-before)
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
	if d, _ := h.op.Decide(ctx, h.approval(cp.OperationID), approverID, true); d.Cause != action.CauseChanged || !strings.Contains(d.Reason, `it now reads "the original, corrected"`) {
		t.Errorf("a copy of a message corrected since its card = %+v, want a repair that says what it reads now", d)
	}

	// A delete made since: an edit quoting the message finds it gone.
	gone := h.delivered("to be deleted")
	edit := h.callOn("commit_edit_message", map[string]any{"operation_id": gone, "text": "too late"})
	del := h.callOn("commit_delete_message", map[string]any{"operation_id": gone})
	if d, err := h.op.Decide(ctx, h.approval(del.OperationID), approverID, true); err != nil || d.Status != action.StatusSucceeded {
		t.Fatalf("delete = %+v, %v", d, err)
	}
	if d, _ := h.op.Decide(ctx, h.approval(edit.OperationID), approverID, true); d.Cause != action.CauseChanged || !strings.Contains(d.Reason, "was deleted since it was approved") {
		t.Errorf("an edit of a message deleted since its card = %+v, want a repair that says it was deleted", d)
	}
}
