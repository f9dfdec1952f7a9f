package telegram_test

import (
	"testing"
	"time"

	"github.com/countersign/countersign/telegram"
	"github.com/countersign/countersign/telegram/telegramtest"
)

// TestUpdateHandlingIsBoundedAndTapsGoAhead: messages are handled by a bounded
// number of workers, and a tap does not wait for them: with the one message
// worker held by a reply that hangs, the next command waits, and a tap is
// decided and delivered meanwhile.
func TestUpdateHandlingIsBoundedAndTapsGoAhead(t *testing.T) {
	t.Parallel()
	r := newRig(t, withOptions(func(o *telegram.Options) { o.MessageWorkers = 1 }))
	r.command(alice, "/send 222 approved while a message is busy")
	card := r.card(alice)
	r.cardFor(bob, opIn(t, card.Text))

	// The one message worker is held: the reply to the next command hangs.
	before := len(sendCalls(r.srv, alice))
	r.srv.Inject(telegramtest.Delay(5 * time.Second).For("sendMessage").InChat(alice))
	r.command(alice, "/help")
	r.waitFor("the reply to /help held", func(s *telegramtest.Server) bool {
		calls := sendCalls(s, alice)
		return len(calls) == before+1 && !calls[before].Done
	})
	r.command(alice, "/ops")

	// A tap has workers of its own: it is decided and delivered meanwhile.
	r.tap(alice, card, "Approve")
	r.waitFor("the approved send", atLeast(1, delivered(target)))
	if calls := sendCalls(r.srv, alice); len(calls) != before+1 || calls[before].Done {
		t.Errorf("replies to alice: %d, the first done: %v; want /ops waiting for the one message worker, /help's reply still held",
			len(calls)-before, calls[before].Done)
	}
	r.waitFor("/ops answered once the worker is free", func(s *telegramtest.Server) bool {
		calls := sendCalls(s, alice)
		return len(calls) == before+2 && calls[before+1].Done
	})
}
