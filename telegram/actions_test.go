package telegram_test

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/countersign/countersign/action"
	"github.com/countersign/countersign/journal"
	"github.com/countersign/countersign/operator"
	"github.com/countersign/countersign/policy"
	"github.com/countersign/countersign/telegram/telegramtest"
)

// withTools offers the named commit tools, each needing a tap.
func withTools(names ...string) rigOption {
	return withPolicy(func(p *policy.Policy) {
		for _, n := range names {
			p.Tools[n] = policy.Tool{SideEffect: policy.SideEffectCommitted, Approval: policy.ApprovalRequired}
		}
	})
}

// remoteCall makes a call of tool from another process on the rig's data
// folder, as an outside agent would, and wants it pending.
func (r *rig) remoteCall(tool string, args any) action.Result {
	r.t.Helper()
	op := r.remote()
	task, err := op.StartTask(r.t.Context(), journal.Task{Surface: "mcp", Summary: "mcp session"})
	if err != nil {
		r.t.Fatal(err)
	}
	raw, _ := json.Marshal(args)
	res, err := op.Call(r.t.Context(), task.ID, operator.Call{Tool: tool, Args: raw})
	if err != nil || res.Status != action.StatusPending {
		r.t.Fatalf("%s = %+v, %v; want pending", tool, res, err)
	}
	return res
}

func (r *rig) committed(opID string) journal.Operation {
	r.t.Helper()
	r.waitFor(opID+" committed", func(*telegramtest.Server) bool { return r.operation(opID).State == journal.Committed })
	return r.operation(opID)
}

// A poll's card shows the question and every option, and who will see the
// votes; the poll that goes out is exactly that one.
func TestAPollIsShownWholeAndSentAsApproved(t *testing.T) {
	t.Parallel()
	r := newRig(t, withTools("commit_send_poll"))
	res := r.remoteCall("commit_send_poll", map[string]any{"chat_id": "222", "question": "Lunch on Friday?", "options": []string{"Pizza", "Sushi"}, "public": true})
	card := r.cardFor(alice, res.OperationID)
	for _, want := range []string{"Sends a poll (public: members see who voted for what; one answer each) with 2 options:", "1. Pizza", "2. Sushi", "Question, exactly as it will be sent", "Lunch on Friday?"} {
		if !strings.Contains(card.Text, want) {
			t.Errorf("card lacks %q:\n%s", want, card.Text)
		}
	}
	r.tap(alice, card, "Approve")
	op := r.committed(res.OperationID)
	m := r.srv.Messages(target)[0]
	if m.Poll == nil || m.Poll.Question != "Lunch on Friday?" || len(m.Poll.Options) != 2 || m.Poll.IsAnonymous {
		t.Fatalf("delivered %+v, want the public poll approved", m.Poll)
	}
	if op.Result.Evidence.MessageIDs[0] != int64(m.MessageID) {
		t.Errorf("evidence %+v, want message %d", op.Result.Evidence, m.MessageID)
	}
}

// Telegram's poll limits are checked before any card.
func TestAPollOverTelegramsLimitsIsSentBackForRepair(t *testing.T) {
	t.Parallel()
	r := newRig(t, withTools("commit_send_poll"))
	op := r.remote()
	task, _ := op.StartTask(t.Context(), journal.Task{Surface: "mcp", Summary: "mcp session"})
	raw, _ := json.Marshal(map[string]any{"chat_id": "222", "question": "Which?", "options": []string{"only one"}})
	res, err := op.Call(t.Context(), task.ID, operator.Call{Tool: "commit_send_poll", Args: raw})
	if err != nil || res.Status != action.StatusRepairable || !strings.Contains(res.Reason, "1 options: a poll has 2 to 12") {
		t.Errorf("a poll of one option = %+v, %v; want a repair naming the limit", res, err)
	}
}

// A message this bot sent is forwarded or copied from its operation, quoted on
// the card; a message a person wrote is forwarded by its chat and id, and the
// card says it cannot show what it reads.
func TestForwardsAndCopiesSayWhatTheyTake(t *testing.T) {
	t.Parallel()
	r := newRig(t, withTools("commit_forward_message", "commit_copy_message"))
	r.command(alice, "/send 222 the agenda for Monday")
	r.tap(alice, r.card(alice), "Approve")
	sendOp := opIn(t, r.replyContaining(alice, "Sent op-").Text)

	res := r.remoteCall("commit_copy_message", map[string]any{"chat_id": "333", "operation_id": sendOp})
	card := r.cardFor(alice, res.OperationID)
	if !strings.Contains(card.Text, "Copies (with no link to the original) message 1 of chat 222 to 333.") || !strings.Contains(card.Text, "It reads:\nthe agenda for Monday") {
		t.Errorf("copy card:\n%s", card.Text)
	}
	r.tap(alice, card, "Approve")
	r.committed(res.OperationID)
	if ms := r.srv.Messages(333); len(ms) != 1 || ms[0].Text != "the agenda for Monday" || ms[0].ForwardOrigin != nil {
		t.Errorf("chat 333 holds %+v, want one copy with no origin", ms)
	}

	r.srv.PushMessage(bob, 222, "a question from a member")
	theirs := 2 // the chat's next id after the bot's message 1
	res = r.remoteCall("commit_forward_message", map[string]any{"chat_id": "333", "from_chat_id": "222", "message_id": theirs})
	card = r.cardFor(alice, res.OperationID)
	if !strings.Contains(card.Text, "Not shown here: what the message says") {
		t.Errorf("forward card of a message the bot did not send:\n%s", card.Text)
	}
	r.tap(alice, card, "Approve")
	r.committed(res.OperationID)
	if ms := r.srv.Messages(333); len(ms) != 2 || ms[1].ForwardOrigin == nil || ms[1].Text != "a question from a member" {
		t.Errorf("chat 333 holds %+v, want the forward with its origin", ms)
	}
}
