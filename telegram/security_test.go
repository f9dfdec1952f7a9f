package telegram_test

import (
	"bytes"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/countersign/countersign/journal"
	"github.com/countersign/countersign/policy"
	"github.com/countersign/countersign/telegram/telegramtest"
)

const carol = 300 // operator, not an approver

// answered waits until a callback answer contains text.
func (r *rig) answered(text string) {
	r.t.Helper()
	r.waitFor(fmt.Sprintf("a callback answer with %q", text), func(s *telegramtest.Server) bool {
		for _, a := range s.CallbackAnswers() {
			if strings.Contains(a.Text, text) {
				return true
			}
		}
		return false
	})
}

// A tap carries the data of an approval that exists, but under another card (as a
// modified client can send it): it decides only the approval its data names, as
// the tapper may, and the card it came under is left as it was; from someone who is
// not an approver it decides nothing, whatever chat it comes from.
func TestATapWithAnotherCardsDataDecidesOnlyTheApprovalItNames(t *testing.T) {
	t.Parallel()
	r := newRig(t)
	r.command(alice, "/send 222 first")
	first := r.cardFor(alice, opIn(t, r.card(alice).Text))
	r.command(alice, "/send 222 second")
	r.replyContaining(alice, "second")
	second := r.card(alice)
	if second.MessageID == first.MessageID || !strings.Contains(second.Text, "second") {
		t.Fatalf("the second card is %q", second.Text)
	}

	r.srv.PushCallbackQuery(mallory, mallory, 1, buttonData(t, first, "Approve"))
	r.answered("not an approver")
	r.srv.PushCallbackQuery(alice, alice, second.MessageID, buttonData(t, first, "Approve"))
	r.waitFor("the delivery", atLeast(1, delivered(target)))
	r.waitFor("the first card edited", func(s *telegramtest.Server) bool {
		m, _ := s.Message(alice, first.MessageID)
		return strings.Contains(m.Text, "Approved by")
	})
	if got := r.srv.Messages(target); len(got) != 1 || got[0].RawText != "first" {
		t.Fatalf("delivered = %+v, want only the first text", got)
	}
	if m, _ := r.srv.Message(alice, second.MessageID); m.Edits != 0 {
		t.Errorf("the card the tap came under was edited %d times", m.Edits)
	}
	if op := r.operation(opIn(t, second.Text)); op.State != journal.AwaitingApproval {
		t.Errorf("the second operation is %s, want still awaiting_approval", op.State)
	}
}

// Telegram delivers the same callback query twice (its update was not confirmed
// before a restart, or was numbered afresh): the second is the same tap, not
// another one, and is not handled at all.
func TestTheSameCallbackQueryDeliveredTwiceIsHandledOnce(t *testing.T) {
	t.Parallel()
	r := newRig(t)
	r.command(alice, "/send 222 once")
	card := r.card(alice)
	data := buttonData(t, card, "Approve")
	_, query := r.srv.PushCallbackQuery(alice, alice, card.MessageID, data)
	r.waitFor("the delivery", atLeast(1, delivered(target)))
	r.srv.PushUpdate(fmt.Sprintf(`{"callback_query":{"id":%q,"from":{"id":%d,"is_bot":false,"first_name":"Alice"},`+
		`"message":{"message_id":%d,"chat":{"id":%d,"type":"private"},"date":0},"chat_instance":"1","data":%q}}`,
		query, alice, card.MessageID, alice, data))
	r.waitFor("the repeat taken and confirmed", func(s *telegramtest.Server) bool { return len(s.PendingUpdates()) == 0 })
	r.shutdown() // waits for the handling of everything taken
	if n := len(r.srv.CallbackAnswers()); n != 1 {
		t.Errorf("callback answers = %d, want 1: the repeat was handled as a tap", n)
	}
	if n := len(r.srv.Messages(target)); n != 1 {
		t.Errorf("deliveries = %d, want 1", n)
	}
}

// A card decided before a restart is tapped again afterwards: the tap is answered
// with the decision already made, and nothing is sent again.
func TestATapOnADecidedCardAfterARestartChangesNothing(t *testing.T) {
	t.Parallel()
	r := newRig(t)
	r.command(alice, "/send 222 decided")
	card := r.card(alice)
	r.tap(alice, card, "Approve")
	r.waitFor("the card edited", func(s *telegramtest.Server) bool {
		m, _ := s.Message(alice, card.MessageID)
		return strings.Contains(m.Text, "Approved by")
	})
	edited, _ := r.srv.Message(alice, card.MessageID)
	r.restart()
	r.tap(alice, card, "Approve") // the buttons are gone, but a client may keep them
	r.tap(alice, card, "Reject")
	r.waitFor("both taps answered", func(s *telegramtest.Server) bool { return len(s.CallbackAnswers()) == 3 })
	for _, a := range r.srv.CallbackAnswers()[1:] {
		if !strings.Contains(a.Text, "Already approved") {
			t.Errorf("answer after the restart = %q, want it to say already approved", a.Text)
		}
	}
	if n := len(r.srv.Messages(target)); n != 1 {
		t.Errorf("deliveries = %d, want 1", n)
	}
	if m, _ := r.srv.Message(alice, card.MessageID); m.Edits != edited.Edits {
		t.Errorf("the decided card was edited again (%d edits, was %d)", m.Edits, edited.Edits)
	}
}

// An operator who is not an approver can command: the card goes to the approvers
// only, the operator is told where it went, and their tap (with the approver's
// button data) is refused.
func TestAnOperatorWhoIsNotAnApproverCommandsButCannotApprove(t *testing.T) {
	t.Parallel()
	r := newRig(t, withPolicy(func(p *policy.Policy) {
		p.Access = policy.Access{Operators: []policy.UserID{alice, carol}, Approvers: []policy.UserID{bob}}
	}))
	r.command(carol, "/send 222 from carol")
	card := r.card(bob)
	r.replyContaining(carol, "the card went to 1 approver(s)")
	for _, chat := range []int64{carol, alice} {
		for _, m := range r.srv.Messages(chat) {
			if strings.Contains(m.Text, "Approval needed") {
				t.Errorf("a card went to %d, who is not an approver", chat)
			}
		}
	}
	r.srv.PushCallbackQuery(carol, carol, card.MessageID, buttonData(t, card, "Approve"))
	r.answered("not an approver")
	if n := len(r.srv.Messages(target)); n != 0 {
		t.Fatalf("deliveries after the operator's tap = %d, want 0", n)
	}
	if m, _ := r.srv.Message(bob, card.MessageID); m.Edits != 0 {
		t.Errorf("the card was edited %d times by the operator's tap", m.Edits)
	}
	r.tap(bob, card, "Approve")
	r.waitFor("the delivery", atLeast(1, delivered(target)))
}

// Someone who is neither an operator nor an approver taps the buttons of an
// unknown-outcome notice (forwarded to them, or with its data copied): the tap is
// refused, the operation stays unknown, its note unresolved, and the notice as it was.
func TestAStrangersTapOnTheResolveButtonsChangesNothing(t *testing.T) {
	t.Parallel()
	r := newRig(t)
	r.srv.Inject(telegramtest.AcceptThenDrop().For("sendMessage").InChat(target))
	r.approveSend("did it arrive?")
	notice := r.notice(alice)
	opID := opIn(t, notice.Text)
	for _, label := range []string{"It arrived", "did not arrive"} {
		r.srv.PushCallbackQuery(mallory, mallory, notice.MessageID, buttonData(t, notice, label))
	}
	r.waitFor("both taps answered", func(s *telegramtest.Server) bool {
		n := 0
		for _, a := range s.CallbackAnswers() {
			if strings.Contains(a.Text, "Only operators can resolve") {
				n++
			}
		}
		return n == 2
	})
	if op := r.operation(opID); op.State != journal.Unknown {
		t.Errorf("state after a stranger's taps = %s, want unknown", op.State)
	}
	if e, _, err := r.vault.Get(opID); err != nil || !e.Unresolved() {
		t.Errorf("envelope after a stranger's taps = %q (%v), want unresolved", e.Status, err)
	}
	if m, _ := r.srv.Message(alice, notice.MessageID); m.Edits != 0 {
		t.Errorf("the notice was edited %d times by a stranger's tap", m.Edits)
	}
	r.tap(alice, notice, "It arrived") // the requester's own tap still resolves it
	r.waitFor("the resolution", func(*telegramtest.Server) bool { return r.operation(opID).State == journal.Committed })
}

// githubToken is a made-up GitHub token: a secret that is not the bot's own.
const githubToken = "ghp_aB3dE5gH7jK9mN1pQ2sT4vW6xY8zC0aB3dE5"

// A command carrying an API key (not the bot's token) is refused, and the key is in
// no file the bot writes: the inbox stores the update with the key withheld, so
// neither the inbox, the journal nor the vault ever holds it.
func TestAnAPIKeyInACommandIsWithheldFromTheInbox(t *testing.T) {
	t.Parallel()
	r := newRig(t)
	id := r.srv.PushMessage(alice, alice, "/send 222 the deploy key is "+githubToken+" for today")
	r.replyContaining(alice, "looks like a secret")
	r.waitFor("the update confirmed", func(s *telegramtest.Server) bool { return !slices.Contains(s.PendingUpdates(), id) })
	r.shutdown()
	filepath.Walk(r.dir, func(path string, info os.FileInfo, err error) error {
		if err != nil || info.IsDir() {
			return err
		}
		if data, _ := os.ReadFile(path); bytes.Contains(data, []byte(githubToken)) {
			t.Errorf("%s holds the key", path)
		}
		return nil
	})
	if strings.Contains(r.logs.String(), githubToken) {
		t.Error("the key is in the logs")
	}
	if n := len(r.srv.Messages(target)); n != 0 {
		t.Errorf("deliveries = %d, want 0", n)
	}
}
