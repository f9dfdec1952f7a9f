package telegram_test

import (
	"strings"
	"testing"
	"time"

	"github.com/countersign/countersign/telegram"
	"github.com/countersign/countersign/telegram/telegramtest"
)

func TestUpdateHandlingIsBoundedAndTapsGoAhead(t *testing.T) {
	t.Parallel()
	r := newRig(t, withOptions(func(o *telegram.Options) { o.MessageWorkers = 1 }))
	r.command(alice, "/send 222 approved while a message is busy")
	card := r.card(alice)
	r.cardFor(bob, opIn(t, card.Text))

	// The one message worker is held: the next command's card to bob hangs.
	r.srv.Inject(telegramtest.Delay(5 * time.Second).For("sendMessage").InChat(bob))
	r.command(alice, "/send 222 its card to bob hangs")
	r.waitFor("the card to bob held", func(s *telegramtest.Server) bool {
		calls := sendCalls(s, bob)
		return len(calls) == 2 && !calls[1].Done
	})
	r.command(alice, "/help")

	// A tap has workers of its own: it is decided and delivered meanwhile.
	r.tap(alice, card, "Approve")
	r.waitFor("the approved send", atLeast(1, delivered(target)))
	helped := func(s *telegramtest.Server) bool {
		for _, m := range s.Messages(alice) {
			if strings.Contains(m.Text, "/pending") {
				return true
			}
		}
		return false
	}
	calls := sendCalls(r.srv, bob)
	if helped(r.srv) || calls[1].Done {
		t.Errorf("/help answered: %v, card to bob done: %v; want /help waiting for the one message worker, the card still held",
			helped(r.srv), calls[1].Done)
	}
	r.waitFor("/help answered once the worker is free", helped)
}
