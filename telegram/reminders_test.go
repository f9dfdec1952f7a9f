package telegram_test

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

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
	last, err := r.j.LastDone(ctx, "reminders:"+telegram.Transport)
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
	if again, err := r.j.LastDone(ctx, "reminders:"+telegram.Transport); err != nil || !again.Equal(last) {
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
