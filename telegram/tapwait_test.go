package telegram_test

import (
	"slices"
	"strings"
	"testing"
	"time"

	"golang.org/x/time/rate"

	"github.com/countersign/countersign/policy"
	"github.com/countersign/countersign/telegram"
	"github.com/countersign/countersign/telegram/telegramtest"
)

// A tap waits for the copies of its card, and for nothing said in another
// chat: a requester who is no approver is told where the card went in their
// own chat, at that chat's pace (here one message in 2 s, after the answer to
// a /help), and the send the tap approves goes before that message's turn.
// The requester still reads that it waits before what the tap did.
func TestATapDoesNotWaitForTheRequestersChat(t *testing.T) {
	t.Parallel()
	r := newRig(t, withPolicy(func(p *policy.Policy) {
		p.Access = policy.Access{Operators: []policy.UserID{carol}, Approvers: []policy.UserID{alice, bob}}
	}), withLimits(&telegram.Limits{Overall: 10000, PerChat: rate.Every(2 * time.Second), PerGroup: 10000, ChatBurst: 1}))
	r.command(carol, "/help")
	r.waitFor("the answer to /help", atLeast(1, delivered(carol)))
	r.command(carol, "/send 222 approved while its requester's chat waits its turn")
	card := r.card(bob)
	r.card(alice) // every copy out: the tap waits for nothing more
	r.tap(bob, card, "Approve")
	r.waitFor("the delivery", atLeast(1, delivered(target)))
	r.replyContaining(carol, "Sent ")
	sends := r.srv.CallsTo("sendMessage")
	at := func(chat int64, text string) int {
		return slices.IndexFunc(sends, func(c telegramtest.Call) bool {
			return c.ChatID == chat && strings.Contains(c.Params["text"], text)
		})
	}
	delivery, wentTo, told := at(target, "approved while"), at(carol, "the card went to"), at(carol, "Sent ")
	if wentTo >= 0 && wentTo < delivery {
		t.Errorf("the approved send (call %d) waited for the requester's turn in their own chat (call %d)%s", delivery, wentTo, r.callSummary())
	}
	if wentTo >= 0 && told < wentTo {
		t.Errorf("the requester read what the tap did (call %d) before that the approval waits (call %d)%s", told, wentTo, r.callSummary())
	}
}
