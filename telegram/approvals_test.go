package telegram_test

import (
	"context"
	"encoding/json"
	"strings"
	"testing"
	"time"

	"github.com/countersign/countersign/action"
	"github.com/countersign/countersign/journal"
	"github.com/countersign/countersign/operator"
	"github.com/countersign/countersign/policy"
	"github.com/countersign/countersign/telegram/telegramtest"
	"github.com/countersign/countersign/tools"
)

const dave = 400 // on the escalation list

// texts are the texts of the messages in chat.
func texts(s *telegramtest.Server, chat int64) []string {
	var out []string
	for _, m := range s.Messages(chat) {
		out = append(out, m.Text)
	}
	return out
}

// An approver taps Edit, replies to the prompt with the corrected text, and
// approves the new card: the target gets the corrected text alone, the old
// card says it was edited and can no longer be approved, and the person who
// asked is told what the request reads now.
func TestAnApproverEditsTheTextFromThePhone(t *testing.T) {
	t.Parallel()
	r := newRig(t)
	r.command(alice, "/send 222 helo wrld")
	old := r.card(bob)
	r.tap(bob, old, "Edit")
	prompt := r.replyContaining(bob, "Reply to this message with the new text")
	forced := false
	for _, c := range sendCalls(r.srv, bob) {
		forced = forced || strings.Contains(c.Params["text"], "Reply to this message") && strings.Contains(c.Params["reply_markup"], `"force_reply":true`)
	}
	if !forced {
		t.Error("the prompt was sent without force_reply: the phone would not open the reply")
	}
	r.srv.PushReply(bob, bob, prompt.MessageID, "hello world")
	r.waitFor("the new card", func(s *telegramtest.Server) bool {
		for _, m := range s.Messages(bob) {
			if strings.Contains(m.Text, "Approval needed") && strings.Contains(m.Text, "hello world") && strings.Contains(string(m.ReplyMarkup), "ap1:") {
				return true
			}
		}
		return false
	})
	r.replyContaining(alice, "changed your request")
	r.waitFor("the old card closed", func(s *telegramtest.Server) bool {
		m, _ := s.Message(bob, old.MessageID)
		return strings.Contains(m.Text, "Edited by user 200")
	})
	r.srv.PushCallbackQuery(bob, bob, old.MessageID, buttonData(t, old, "Approve"))
	r.answered("Already edited")
	r.tap(alice, r.card(alice), "Approve")
	r.waitFor("the delivery", atLeast(1, delivered(target)))
	r.waitFor("the outcome", func(*telegramtest.Server) bool { return r.operation(opIn(t, old.Text)).State == journal.Committed })
	if got := texts(r.srv, target); len(got) != 1 || got[0] != "hello world" {
		t.Errorf("target got %q, want the edited text once", got)
	}
	opID := opIn(t, old.Text)
	edits, err := r.j.Edits(context.Background(), opID)
	if err != nil || len(edits) != 1 || edits[0].Old.Text != "helo wrld" || edits[0].By != bob {
		t.Errorf("edits = %+v, %v; want the old text kept, by bob", edits, err)
	}
}

// With approvals: 2, the first tap is noted on the cards and sends nothing;
// the second approver's tap sends once.
func TestAQuorumOnThePhone(t *testing.T) {
	t.Parallel()
	r := newRig(t, withPolicy(func(p *policy.Policy) {
		tp := p.Tools["commit_send_message"]
		tp.Approvals = 2
		p.Tools["commit_send_message"] = tp
	}))
	r.command(alice, "/send 222 two keys")
	card := r.card(alice)
	if !strings.Contains(card.Text, "Needs: 2 different approvers") {
		t.Errorf("card = %q, want the quorum said", card.Text)
	}
	r.tap(alice, card, "Approve")
	r.replyContaining(bob, "approved by 100 (1 of 2); 1 more approver(s) needed")
	if n := len(r.srv.Messages(target)); n != 0 {
		t.Fatalf("sent %d after one approval of two", n)
	}
	r.tap(alice, card, "Approve") // a second tap of the same approver counts nothing
	r.answered("You approved this already")
	if n := len(r.srv.Messages(target)); n != 0 {
		t.Fatalf("sent %d after the same approver twice", n)
	}
	r.tap(bob, r.card(bob), "Approve")
	r.waitFor("the outcome", func(*telegramtest.Server) bool { return r.operation(opIn(t, card.Text)).State == journal.Committed })
	if n := len(r.srv.Messages(target)); n != 1 {
		t.Errorf("sent %d, want 1", n)
	}
	a, err := r.j.LatestApproval(context.Background(), r.operation(opIn(t, card.Text)).ID)
	if err != nil || a.Approvals() != 2 {
		t.Errorf("approval = %+v, %v; want two approvers recorded", a, err)
	}
}

// Nobody decides within escalate_after of the time to live: the card goes to
// the escalation list, whose tap then decides.
func TestNobodyDecidedSoTheCardGoesToTheEscalationList(t *testing.T) {
	t.Parallel()
	r := newRig(t, withPolicy(func(p *policy.Policy) {
		p.EscalateAfter, p.Access.Escalation = 0.5, []policy.UserID{dave}
	}))
	r.srv.PushMessage(dave, dave, "hello") // dave has a chat with the bot
	r.command(alice, "/send 222 anyone there?")
	r.card(alice)
	r.clock.advance(13 * time.Hour)
	card := r.card(dave)
	if !strings.Contains(card.Text, "Escalated") {
		t.Errorf("card = %q, want it to say it was escalated", card.Text)
	}
	r.replyContaining(alice, "its card went to 1 more approver(s)")
	r.tap(dave, card, "Approve")
	r.waitFor("the delivery", atLeast(1, delivered(target)))
}

// An approver grants a tool to a chat for an hour: a send there needs no
// card and names the grant; after /revoke it needs a card again.
func TestAWindowGrantFromThePhone(t *testing.T) {
	t.Parallel()
	r := newRig(t, withPolicy(func(p *policy.Policy) { p.GrantMax = 2 * time.Hour }))
	r.command(bob, "/grant commit_send_message 222 1h") // bob approves, and is no operator
	m := r.replyContaining(bob, "Grant gr-")
	id := strings.Fields(strings.TrimPrefix(m.Text, "Grant "))[0]
	id = strings.TrimSuffix(id, ":")
	r.command(alice, "/send 222 under the grant")
	r.waitFor("the delivery", atLeast(1, delivered(target)))
	r.replyContaining(alice, "Sent op-")
	r.command(bob, "/grants")
	r.replyContaining(bob, id+": commit_send_message to 222")
	r.command(bob, "/revoke "+id)
	r.replyContaining(bob, "is revoked")
	r.command(alice, "/send 222 after the grant")
	r.card(bob)
	if n := len(r.srv.Messages(target)); n != 1 {
		t.Errorf("sent %d, want only the one under the grant", n)
	}
}

// /pending offers, for a task that waits on two approvals, one card listing
// both with their hashes; its button approves and sends exactly those.
func TestApproveAllOfATaskFromPending(t *testing.T) {
	t.Parallel()
	r := newRig(t)
	ctx := context.Background()
	task, err := r.op.StartTask(ctx, journal.Task{Requester: alice, Chat: "100", Summary: "two posts", Surface: "telegram"})
	if err != nil {
		t.Fatal(err)
	}
	for _, text := range []string{"first of two", "second of two"} {
		args, _ := json.Marshal(tools.SendArgs{ChatID: "222", Text: text})
		if res, err := r.op.Call(ctx, task.ID, operator.Call{Tool: "commit_send_message", Args: args}); err != nil || res.Status != action.StatusPending {
			t.Fatalf("Call = %+v, %v", res, err)
		}
	}
	r.command(alice, "/pending")
	offer := r.replyContaining(alice, "one grant can approve them all")
	r.tap(alice, offer, "Approve all 2")
	card := r.replyContaining(alice, "One grant approves exactly these")
	r.tap(alice, card, "Approve these 2")
	r.waitFor("both deliveries", atLeast(2, delivered(target)))
	r.replyContaining(alice, "approved 2 approval(s) of "+task.ID)
	r.tap(alice, card, "Approve these 2") // nothing waits any more
	r.replyContaining(alice, "nothing of "+task.ID+" waits")
	if n := len(r.srv.Messages(target)); n != 2 {
		t.Errorf("sent %d, want 2", n)
	}
}

// One decision is one notice: a requester who approves on their own card reads
// the outcome on the card as it is edited, and gets no message beside it; a
// requester who is no approver, with no card to read, is told in a message.
func TestADecisionIsSaidOnceToARequesterWithACard(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name      string
		approvers []policy.UserID
		told      bool
	}{
		{"the requester approves on their own card", []policy.UserID{alice, bob}, false},
		{"the requester is no approver", []policy.UserID{bob}, true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			r := newRig(t, withPolicy(func(p *policy.Policy) { p.Access.Approvers = tt.approvers }))
			r.command(alice, "/send 222 one notice")
			card := r.card(bob)
			if tt.told {
				r.replyContaining(alice, "waits for approval") // where the card went, before any tap
			}
			before := len(sendCalls(r.srv, alice))
			r.tap(bob, card, "Approve")
			r.waitFor("the delivery", atLeast(1, delivered(target)))
			r.waitFor("the card edited", func(s *telegramtest.Server) bool {
				m, _ := s.Message(bob, card.MessageID)
				return strings.Contains(m.Text, "Approved by")
			})
			if tt.told {
				r.replyContaining(alice, "Sent")
			}
			r.shutdown() // Serve waits for the work it started: nothing comes after the count
			if got := len(sendCalls(r.srv, alice)) - before; got != map[bool]int{true: 1, false: 0}[tt.told] {
				t.Errorf("the requester got %d message(s) after the tap, want %v", got, map[bool]int{true: 1, false: 0}[tt.told])
			}
		})
	}
}
