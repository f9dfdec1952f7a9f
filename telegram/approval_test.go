package telegram_test

import (
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/countersign/countersign/journal"
	"github.com/countersign/countersign/policy"

	"github.com/countersign/countersign/telegram/telegramtest"
)

func TestApproveDeliversExactlyTheText(t *testing.T) {
	t.Parallel()
	r := newRig(t)
	text := "Hello  from\nCountersign — ünïcode ✓ "
	r.command(alice, "/send 222 "+text)
	card := r.card(alice)
	for _, want := range []string{"send_message", "To: 222", "Operation: op-", "Payload: sha256 ", "Verified: pass", "Expires: ", text} {
		if !strings.Contains(card.Text, want) {
			t.Errorf("card lacks %q:\n%s", want, card.Text)
		}
	}
	if !strings.Contains(string(card.ReplyMarkup), "Approve") || !strings.Contains(string(card.ReplyMarkup), "Reject") {
		t.Errorf("card buttons = %s", card.ReplyMarkup)
	}
	for _, c := range r.srv.CallsTo("sendMessage") {
		if strings.Contains(c.Params["reply_markup"], "copy_text") {
			t.Errorf("buttons carry copy_text on the wire: %s", c.Params["reply_markup"])
		}
	}
	r.tap(alice, card, "Approve")
	r.waitFor("the delivery", atLeast(1, delivered(target)))
	if got := r.srv.Messages(target); len(got) != 1 || got[0].RawText != text {
		t.Fatalf("delivered = %+v, want exactly %q once", got, text)
	}
	r.waitFor("the card edited with the outcome", func(s *telegramtest.Server) bool {
		m, _ := s.Message(alice, card.MessageID)
		return strings.Contains(m.Text, "Approved by") && strings.Contains(m.Text, "message 1")
	})
	if n := len(r.srv.CallbackAnswers()); n != 1 {
		t.Errorf("callback answers = %d, want 1", n)
	}
}

func TestRejectDeliversNothing(t *testing.T) {
	t.Parallel()
	r := newRig(t)
	r.command(alice, "/send 222 not this one")
	card := r.card(alice)
	r.tap(alice, card, "Reject")
	r.waitFor("the card edited", func(s *telegramtest.Server) bool {
		m, _ := s.Message(alice, card.MessageID)
		return strings.Contains(m.Text, "Rejected by")
	})
	if n := len(r.srv.Messages(target)); n != 0 {
		t.Errorf("deliveries = %d, want 0", n)
	}
}

func TestNoDecisionDeliversNothing(t *testing.T) {
	t.Parallel()
	r := newRig(t)
	r.command(alice, "/send 222 waiting")
	r.card(alice)
	r.card(bob) // every approver got a copy
	// A send that skipped approval would run inside the command, before any card
	// goes out, so by now it would show.
	if n := len(r.srv.Messages(target)); n != 0 {
		t.Errorf("deliveries without a decision = %d, want 0", n)
	}
}

func TestStrangerGetsOneRefusalAndNothingElse(t *testing.T) {
	t.Parallel()
	r := newRig(t)
	r.command(mallory, "/send 222 hi")
	r.replyContaining(mallory, "only answers its operators")
	r.command(alice, "/ops") // a later update, handled after the stranger's
	r.replyContaining(alice, "No operations yet")
	if got := r.srv.Messages(mallory); len(got) != 1 {
		t.Errorf("stranger got %d messages, want 1 refusal", len(got))
	}
	if n := len(r.srv.Messages(target)) + len(r.srv.Messages(bob)); n != 0 {
		t.Errorf("a stranger's command caused %d messages, want 0", n)
	}
}

func TestStrangersTapChangesNothing(t *testing.T) {
	t.Parallel()
	r := newRig(t)
	r.command(alice, "/send 222 hi")
	card := r.card(alice)
	r.tap(mallory, card, "Approve")
	r.waitFor("the stranger's tap answered", func(s *telegramtest.Server) bool {
		for _, a := range s.CallbackAnswers() {
			if strings.Contains(a.Text, "not an approver of this request") {
				return true
			}
		}
		return false
	})
	if n := len(r.srv.Messages(target)); n != 0 {
		t.Fatalf("deliveries after a stranger's tap = %d, want 0", n)
	}
	if m, _ := r.srv.Message(alice, card.MessageID); m.Edits != 0 {
		t.Errorf("card edited %d times by a stranger's tap", m.Edits)
	}
	r.tap(alice, card, "Approve")
	r.waitFor("the delivery", atLeast(1, delivered(target)))
}

func TestDoubleTapAndTwoApproversCommitOnce(t *testing.T) {
	t.Parallel()
	r := newRig(t)
	r.command(alice, "/send 222 once")
	aliceCard, bobCard := r.card(alice), r.card(bob)
	var wg sync.WaitGroup
	for _, tap := range []func(){
		func() { r.tap(alice, aliceCard, "Approve") },
		func() { r.tap(alice, aliceCard, "Approve") },
		func() { r.tap(bob, bobCard, "Approve") },
	} {
		wg.Add(1)
		go func() { defer wg.Done(); tap() }()
	}
	wg.Wait()
	r.waitFor("three answers", func(s *telegramtest.Server) bool { return len(s.CallbackAnswers()) == 3 })
	r.waitFor("both cards edited", func(s *telegramtest.Server) bool {
		a, _ := s.Message(alice, aliceCard.MessageID)
		b, _ := s.Message(bob, bobCard.MessageID)
		return strings.Contains(a.Text, "Approved by") && strings.Contains(b.Text, "Approved by")
	})
	if n := len(r.srv.Messages(target)); n != 1 {
		t.Errorf("deliveries = %d, want exactly 1", n)
	}
}

func TestExpiredCardSaysSoAndDeliversNothing(t *testing.T) {
	t.Parallel()
	r := newRig(t, withPolicy(func(p *policy.Policy) { p.ApprovalTTL = time.Millisecond }))
	r.command(alice, "/send 222 too late")
	card := r.card(alice)
	r.waitFor("the card marked expired", func(s *telegramtest.Server) bool {
		m, _ := s.Message(alice, card.MessageID)
		return strings.Contains(m.Text, "Expired")
	})
	r.tap(alice, card, "Approve")
	r.waitFor("the tap answered", func(s *telegramtest.Server) bool { return len(s.CallbackAnswers()) == 1 })
	if a := r.srv.CallbackAnswers()[0]; !strings.Contains(a.Text, "expired") {
		t.Errorf("answer = %q, want it to say expired", a.Text)
	}
	if n := len(r.srv.Messages(target)); n != 0 {
		t.Errorf("deliveries = %d, want 0", n)
	}
}

// An approval that expires while its cards are on their way has every card
// closed, whichever comes first: the expiry before any card is out (the card
// waits on the chat's name, getChat), or between two approvers' cards (the
// second one slow). A card left with its buttons would ask for a tap that
// can no longer send anything.
func TestAnApprovalExpiredOnItsCardsWayClosesEveryCard(t *testing.T) {
	t.Parallel()
	for _, tt := range []struct {
		name string
		ttl  time.Duration
		slow telegramtest.Fault
	}{
		{"before the first card", time.Millisecond, telegramtest.Delay(600 * time.Millisecond).For("getChat")},
		{"between two cards", 300 * time.Millisecond, telegramtest.Delay(time.Second).For("sendMessage").InChat(bob)},
	} {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			r := newRig(t, withPolicy(func(p *policy.Policy) { p.ApprovalTTL = tt.ttl }))
			r.srv.Inject(tt.slow)
			r.command(alice, "/send 222 expires on the way")
			// The card itself, closed: it may be closed before the test
			// first looks, so it is found by its text, not by its buttons.
			for _, chat := range []int64{alice, bob} {
				r.waitFor(fmt.Sprintf("the card in chat %d marked expired", chat), func(s *telegramtest.Server) bool {
					for _, m := range s.Messages(chat) {
						if strings.Contains(m.Text, "Approval needed") && strings.Contains(m.Text, "Expired") && !strings.Contains(string(m.ReplyMarkup), "ap1:") {
							return true
						}
					}
					return false
				})
			}
		})
	}
}

func TestPendingCardWorksAfterRestart(t *testing.T) {
	t.Parallel()
	r := newRig(t)
	r.command(alice, "/send 222 survives a restart")
	card := r.card(alice)
	r.restart()
	r.tap(alice, card, "Approve")
	r.waitFor("the delivery", atLeast(1, delivered(target)))
	if n := len(r.srv.Messages(target)); n != 1 {
		t.Errorf("deliveries = %d, want 1", n)
	}
}

func TestForgedCallbackDataChangesNothing(t *testing.T) {
	t.Parallel()
	r := newRig(t)
	r.command(alice, "/send 222 guarded")
	card := r.card(alice)
	apID := strings.Split(buttonData(t, card, "Approve"), ":")[1]
	for _, data := range []string{
		"ap1:ap-forged:y",        // an approval that does not exist
		"ap2:" + apID + ":y",     // a version this bot does not speak
		"ap1:" + apID + ":maybe", // an answer that is not one
		`{"text":"send money"}`,  // a payload instead of an id
		"rs1:op-forged:d",        // resolving what is not unknown
	} {
		r.srv.PushCallbackQuery(alice, alice, card.MessageID, data)
	}
	r.waitFor("five answers", func(s *telegramtest.Server) bool { return len(s.CallbackAnswers()) == 5 })
	// A tap is recorded before it is answered: the journal says now what it decided.
	for _, a := range r.srv.CallbackAnswers() {
		if strings.Contains(a.Text, "Approved") || strings.Contains(a.Text, "Rejected") {
			t.Errorf("a forged tap was answered %q", a.Text)
		}
	}
	if op := r.operation(opIn(t, card.Text)); op.State != journal.AwaitingApproval {
		t.Errorf("state after the forged taps = %s, want awaiting_approval", op.State)
	}
	if n := len(r.srv.Messages(target)); n != 0 {
		t.Errorf("deliveries = %d, want 0", n)
	}
	if m, _ := r.srv.Message(alice, card.MessageID); m.Edits != 0 {
		t.Errorf("the card was edited %d times", m.Edits)
	}
	r.tap(alice, card, "Approve") // the real button still works
	r.waitFor("the delivery", atLeast(1, delivered(target)))
}

// TestSendDoesNotWaitForTheTapsAnswer: the tap is answered with what was recorded
// while the commit goes on, so a slow answer does not hold up the send.
func TestSendDoesNotWaitForTheTapsAnswer(t *testing.T) {
	t.Parallel()
	r := newRig(t)
	r.command(alice, "/send 222 sent at once")
	card := r.card(alice)
	const slow = 2 * time.Second
	r.srv.Inject(telegramtest.Delay(slow).For("answerCallbackQuery"))
	r.tap(alice, card, "Approve")
	r.waitFor("the delivery and the answer", func(s *telegramtest.Server) bool {
		return len(s.Messages(target)) == 1 && len(s.CallbackAnswers()) == 1
	})
	answer, send := r.srv.CallsTo("answerCallbackQuery")[0], r.srv.CallsTo("sendMessage")
	var delivery telegramtest.Call
	for _, c := range send {
		if c.ChatID == target {
			delivery = c
		}
	}
	if gap := delivery.Time.Sub(answer.Time); gap >= slow/2 {
		t.Errorf("the send reached Telegram %v after the tap's answer did, want well under %v: it waited for the answer", gap, slow)
	}
}
