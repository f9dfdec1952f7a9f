package telegram_test

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/countersign/countersign/coord"
	"github.com/countersign/countersign/journal"
	"github.com/countersign/countersign/policy"
	"github.com/countersign/countersign/telegram"
	"github.com/countersign/countersign/telegram/telegramtest"
	"github.com/countersign/countersign/vault"
)

const reminderMark = "⏰ Still unknown since"

// reminders are the digest's messages about opID in chat.
func reminders(s *telegramtest.Server, chat int64, opID string) []telegramtest.Message {
	var out []telegramtest.Message
	for _, m := range s.Messages(chat) {
		if strings.HasPrefix(m.Text, reminderMark) && strings.Contains(m.Text, opID) {
			out = append(out, m)
		}
	}
	return out
}

// lostSend approves a send whose answer is lost, and returns the operation,
// unknown, once its notice is out.
func (r *rig) lostSend(text string) string {
	r.t.Helper()
	r.srv.Inject(telegramtest.AcceptThenDrop().For("sendMessage").InChat(target).Times(1))
	r.approveSend(text)
	var opID string
	r.waitFor("the notice of "+text, func(s *telegramtest.Server) bool {
		for _, m := range s.Messages(alice) {
			if strings.Contains(string(m.ReplyMarkup), "rs1:") && r.operation(opIn(r.t, m.Text)).Payload.Text == text {
				opID = opIn(r.t, m.Text)
			}
		}
		return opID != ""
	})
	return opID
}

// The sweep's digest brings an outcome still unknown back to its approvers,
// with the notice's buttons; it goes out once per interval, a restart
// included, and a tap on it resolves as a tap on the notice does. The same
// sweep collects the resolved note whose envelope_ttl passed, and keeps the
// unresolved one.
func TestDigestRemindsTheApproversOncePerInterval(t *testing.T) {
	t.Parallel()
	r := newRig(t, withPolicy(func(p *policy.Policy) {
		p.EnvelopeTTL = 3 * time.Hour // the tasks' snapshots take it
		p.Reminders = &policy.Reminders{Every: 24 * time.Hour, CollectNotes: true}
	}))
	ctx := context.Background()
	lost := r.lostSend("did it arrive?")
	answered := r.lostSend("this one too?")
	r.tap(alice, r.notice(alice), "It arrived") // the newest notice: answered's
	r.waitFor("the resolution", func(*telegramtest.Server) bool { return r.operation(answered).State == journal.Committed })
	if n := len(reminders(r.srv, alice, lost)); n != 0 {
		t.Fatalf("reminders before an hour passed = %d, want 0: the notice is the first", n)
	}

	first, _, err := r.vault.Get(lost)
	if err != nil {
		t.Fatal(err)
	}
	r.clock.advance(2 * time.Hour)
	digestAt := r.clock.now()
	r.waitFor("the digest to both approvers", func(s *telegramtest.Server) bool {
		return len(reminders(s, alice, lost)) == 1 && len(reminders(s, bob, lost)) == 1
	})
	m := reminders(r.srv, bob, lost)[0]
	for _, want := range []string{"send_message to 222", "look for the message in chat 222"} {
		if !strings.Contains(m.Text, want) {
			t.Errorf("reminder = %q, want it to say %q", m.Text, want)
		}
	}
	if len(reminders(r.srv, alice, answered)) != 0 || len(reminders(r.srv, mallory, lost)) != 0 {
		t.Errorf("reminders of a resolved outcome, or to a stranger: want none")
	}
	last, err := coord.New(r.j).LastDone(ctx, "reminders:"+telegram.Transport)
	if err != nil || last.Before(digestAt.Add(-time.Second)) {
		t.Fatalf("digest recorded at %v, %v; want about %v", last, err, digestAt)
	}

	// A restart within the interval sends no second digest; its sweep collects
	// the resolved note, now past its envelope_ttl, and keeps the unresolved one.
	r.restart()
	r.clock.advance(2 * time.Hour)
	r.waitFor("the resolved note collected", func(*telegramtest.Server) bool {
		_, _, err := r.vault.Get(answered)
		return errors.Is(err, vault.ErrNotFound)
	})
	// Kept, not removed and written again by the next reconcile.
	if e, _, err := r.vault.Get(lost); err != nil || !e.Unresolved() || !e.Created.Equal(first.Created) {
		t.Fatalf("unresolved note after the collection = %+v, %v; want the one written first, kept", e, err)
	}
	if again, err := coord.New(r.j).LastDone(ctx, "reminders:"+telegram.Transport); err != nil || !again.Equal(last) {
		t.Errorf("digest recorded at %v, %v after the restart; want still %v", again, err, last)
	}

	// A tap on the digest resolves, and closes the notice and the other reminder.
	r.tap(bob, m, "It did not arrive")
	r.waitFor("the resolution by the digest", func(*telegramtest.Server) bool { return r.operation(lost).State == journal.NotDelivered })
	r.waitFor("the other approver's reminder closed", func(s *telegramtest.Server) bool {
		got := reminders(s, alice, lost)
		return len(got) == 1 && strings.Contains(got[0].Text, "Resolved: ") && !strings.Contains(string(got[0].ReplyMarkup), "rs1:")
	})
	r.shutdown()
	if a, b := len(reminders(r.srv, alice, lost)), len(reminders(r.srv, bob, lost)); a != 1 || b != 1 {
		t.Errorf("reminders = %d to alice and %d to bob, want one each", a, b)
	}
	if !strings.Contains(r.logs.String(), "digest of unknown outcomes sent") {
		t.Errorf("logs say no digest was sent:\n%s", r.logs.String())
	}
}

// The digest reminds every approver of an outcome still unknown, its requester
// among them where self-approval is off: saying whether it arrived approves
// nothing.
func TestDigestRemindsTheRequesterWhereSelfApprovalIsOff(t *testing.T) {
	t.Parallel()
	off := false
	r := newRig(t, withPolicy(func(p *policy.Policy) {
		p.AutoApprove = []policy.AutoApprove{{Tool: "commit_send_message", Chats: []string{"222"}}}
		p.SelfApproval = &off
		p.Reminders = &policy.Reminders{Every: 24 * time.Hour}
	}))
	r.srv.Inject(telegramtest.AcceptThenDrop().For("sendMessage").InChat(target).Times(1))
	lost := r.remoteSendFor(r.remote(), alice, "did it arrive?")
	r.waitFor("the unknown outcome", func(*telegramtest.Server) bool { return r.operation(lost.OperationID).State == journal.Unknown })
	r.clock.advance(2 * time.Hour)
	r.waitFor("the digest to both approvers, the requester too", func(s *telegramtest.Server) bool {
		return len(reminders(s, alice, lost.OperationID)) == 1 && len(reminders(s, bob, lost.OperationID)) == 1
	})
}

// approvalReminders are the reminders of an approval near its expiry in chat.
func approvalReminders(s *telegramtest.Server, chat int64, opID string) []telegramtest.Message {
	var out []telegramtest.Message
	for _, m := range s.Messages(chat) {
		if strings.HasPrefix(m.Text, "⏰ "+opID+" still waits for a decision") {
			out = append(out, m)
		}
	}
	return out
}

// An approval nobody decided is reminded of once, near its expiry (a quarter
// of its time to live, at most an hour, before it), to every approver that
// has its card, as an answer to the card with its buttons; a restart sends no
// second one, and a tap on the reminder decides as a tap on the card does,
// closing both.
func TestAnApprovalNearItsExpiryIsRemindedOnce(t *testing.T) {
	t.Parallel()
	r := newRig(t)
	r.command(alice, "/send 222 waiting for a tap")
	card := r.card(alice)
	opID := opIn(t, card.Text[strings.Index(card.Text, "Operation: "):])
	r.cardFor(bob, opID)            // both cards out and recorded before the restart
	r.clock.advance(22 * time.Hour) // 2 h before the 24 h expiry: not yet
	r.restart()                     // a sweep runs at start
	r.waitFor("a sweep after the restart", func(s *telegramtest.Server) bool { return len(s.CallsTo("getMe")) == 2 })
	// A reminder sent now would say 2 h are left, and be the only one: the
	// one below says 30 minutes.

	r.clock.advance(90 * time.Minute) // 30 min before
	r.waitFor("the reminder to both approvers", func(s *telegramtest.Server) bool {
		return len(approvalReminders(s, alice, opID)) == 1 && len(approvalReminders(s, bob, opID)) == 1
	})
	m := approvalReminders(r.srv, alice, opID)[0]
	if m.ReplyTo != card.MessageID || !strings.Contains(string(m.ReplyMarkup), "ap1:") || !(strings.Contains(m.Text, "(in 30m0s)") || strings.Contains(m.Text, "(in 29m0s)")) {
		t.Errorf("reminder %+v, want an answer to the card %d with its buttons, saying 30 minutes are left", m, card.MessageID)
	}
	r.restart()
	r.clock.advance(10 * time.Minute)
	r.tap(alice, m, "Approve")
	r.waitFor("the send", func(*telegramtest.Server) bool { return r.operation(opID).State == journal.Committed })
	r.waitFor("the card closed", func(s *telegramtest.Server) bool {
		c, _ := s.Message(alice, card.MessageID)
		return strings.Contains(c.Text, "Approved") && !strings.Contains(string(c.ReplyMarkup), "ap1:")
	})
	r.shutdown()
	if a, b := len(approvalReminders(r.srv, alice, opID)), len(approvalReminders(r.srv, bob, opID)); a != 1 || b != 1 {
		t.Errorf("reminders = %d to alice and %d to bob, want one each", a, b)
	}
}

// /pending on the phone puts a decision's buttons beside what waits: an
// approval is answered on its card, and a tap there decides it; an unknown
// outcome gets the resolve buttons.
func TestPendingOnThePhoneHasTheButtons(t *testing.T) {
	t.Parallel()
	r := newRig(t)
	lost := r.lostSend("did this one arrive?")
	r.command(alice, "/send 222 still to decide")
	card := r.card(alice)
	opID := opIn(t, card.Text[strings.Index(card.Text, "Operation: "):])
	notices := len(r.srv.CallsTo("sendMessage"))
	r.command(alice, "/pending")
	var answer telegramtest.Message
	r.waitFor("the buttons beside /pending", func(s *telegramtest.Server) bool {
		resolves := 0
		for _, m := range s.Messages(alice) {
			if strings.HasPrefix(m.Text, opID+" waits for your decision") && m.ReplyTo == card.MessageID && strings.Contains(string(m.ReplyMarkup), "ap1:") {
				answer = m
			}
			if strings.Contains(m.Text, lost) && strings.Contains(string(m.ReplyMarkup), "rs1:") {
				resolves++
			}
		}
		return answer.MessageID != 0 && resolves == 2 // the first notice, and /pending's
	})
	if len(r.srv.CallsTo("sendMessage")) <= notices {
		t.Fatal("nothing was sent for /pending")
	}
	r.tap(alice, answer, "Approve")
	r.waitFor("the send", func(*telegramtest.Server) bool { return r.operation(opID).State == journal.Committed })
}
