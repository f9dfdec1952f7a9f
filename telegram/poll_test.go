package telegram_test

import (
	"slices"
	"testing"
	"time"

	"github.com/countersign/countersign/telegram/telegramtest"
)

// quietWeek moves the bot's clock past a week without updates, after which
// Telegram may number updates afresh, and waits for the poll that follows: one
// without an offset, held open, so that whatever Telegram numbers next is returned.
func (r *rig) quietWeek() {
	r.t.Helper()
	polls := len(r.srv.CallsTo("getUpdates"))
	r.clock.advance(7*24*time.Hour + time.Minute)
	r.waitFor("a poll without an offset after the quiet week", func(s *telegramtest.Server) bool {
		calls := s.CallsTo("getUpdates")
		return len(calls) > polls && calls[len(calls)-1].Params["offset"] == "" && !calls[len(calls)-1].Done
	})
}

func TestPollAfterRenumberingLosesNothing(t *testing.T) {
	r := newRig(t, withServer(func(o *telegramtest.Options) { o.FirstUpdateID = 5000 }))
	r.command(alice, "/ops")
	r.replyContaining(alice, "No operations yet")
	r.waitFor("update 5000 confirmed", func(s *telegramtest.Server) bool { return len(s.PendingUpdates()) == 0 })

	r.quietWeek()
	r.srv.Renumber(1)
	r.command(alice, "/help")
	r.replyContaining(alice, "/send")
	r.command(alice, "/pending")
	r.command(alice, "/ops")
	r.waitFor("replies to every command, or an update lost", func(s *telegramtest.Server) bool {
		return len(s.Messages(alice)) >= 4 || len(s.ConfirmedUnread()) > 0
	})
	if lost := r.srv.ConfirmedUnread(); len(lost) != 0 {
		t.Fatalf("updates %v were confirmed to Telegram unread\ncalls: %s", lost, r.callSummary())
	}
	// The path: after the renumbered batch, the next poll asks from the id after
	// the one Telegram returned, not from the old high mark.
	var offsets []string
	for _, c := range r.srv.CallsTo("getUpdates") {
		offsets = append(offsets, c.Params["offset"])
	}
	if !slices.Contains(offsets, "2") || slices.Contains(offsets[slices.Index(offsets, "2"):], "5001") {
		t.Errorf("getUpdates offsets = %v, want 2 after the renumbered update 1, and never 5001 again", offsets)
	}
	r.waitFor("the last reply", func(s *telegramtest.Server) bool { return len(s.Messages(alice)) == 4 })
}
