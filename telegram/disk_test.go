package telegram_test

import (
	"fmt"
	"slices"
	"strings"
	"testing"

	"github.com/countersign/countersign/command"
	"github.com/countersign/countersign/journal"
	"github.com/countersign/countersign/telegram/telegramtest"
)

func TestAFullDiskLosesNoUpdate(t *testing.T) {
	r := newRig(t)
	// The journal is frozen at its size: storing an update needs pages it cannot have.
	r.jopts = []journal.Option{journal.WithSizeLimit(1)}
	r.restart()
	// Under 4,096 characters (one message), over a page in UTF-8 bytes.
	text := strings.Repeat("Квартальные цифры готовы. ", 120)

	polls := len(r.srv.CallsTo("getUpdates"))
	id := r.srv.PushMessage(alice, alice, "/send 222 "+text)
	r.waitFor("the bot to ask for the update again", func(s *telegramtest.Server) bool {
		return len(s.CallsTo("getUpdates")) >= polls+3
	})
	if !slices.Contains(r.srv.PendingUpdates(), id) {
		t.Fatalf("update %d was confirmed to Telegram without being stored", id)
	}
	if n := len(r.srv.Messages(alice)); n != 0 {
		t.Errorf("%d messages to alice while nothing could be journaled, want none", n)
	}
	if logs := r.logs.String(); !strings.Contains(logs, "updates not stored") || !strings.Contains(logs, "full") {
		t.Errorf("the log does not say why the update waits:\n%s", logs)
	}

	// Space comes back: the same update is taken, once, and goes through as asked.
	r.jopts = nil
	r.restart()
	card := r.card(alice)
	if !strings.Contains(card.Text, "Квартальные цифры готовы.") {
		t.Fatalf("card = %q, want the text of the update that waited", card.Text)
	}
	r.tap(alice, card, "Approve")
	r.waitFor("the delivery", atLeast(1, delivered(target)))
	if got := r.srv.Messages(target); len(got) != 1 || got[0].RawText != text {
		t.Errorf("deliveries = %d, want exactly the text once", len(got))
	}
}

// A command that reached the inbox but cannot be journaled (its operation needs
// room the disk has not) is answered with what happened, the bot's disk is full,
// and nothing leaves.
func TestACommandThatCannotBeJournaledIsAnsweredTheDiskIsFull(t *testing.T) {
	r := newRig(t)
	var b strings.Builder
	for i := 0; b.Len() < 30000; i++ {
		fmt.Fprintf(&b, "Paragraph %d of the quarterly report, long enough to need pages of its own.\n\n", i)
	}
	long := strings.TrimSpace(b.String())
	// The update was stored while there was room, and the process stopped.
	r.aProcessThatStopped(func(h *command.Handler) { storeUpdate(t, h, 900, "/send 222 "+long) })
	// The journal is frozen at its size: the operation, its text and its parts do
	// not fit in it.
	r.jopts = []journal.Option{journal.WithSizeLimit(1)}
	r.start()
	r.replyContaining(alice, "disk is full")
	r.shutdown()
	if n := len(r.srv.Messages(target)); n != 0 {
		t.Errorf("deliveries = %d, want none", n)
	}
	if n := len(cardsIn(r.srv, alice)) + len(cardsIn(r.srv, bob)); n != 0 {
		t.Errorf("%d cards went out for a command that was not journaled", n)
	}
}
