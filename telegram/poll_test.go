package telegram_test

import (
	"fmt"
	"slices"
	"strings"
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
	t.Parallel()
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

// draftUpdate is a message update carrying alice's /draft, as Telegram sends it.
func draftUpdate(messageID int, text string) string {
	cmd := "/draft " + text
	return fmt.Sprintf(`{"update_id":1,"message":{"message_id":%d,"date":%d,"from":{"id":%d,"is_bot":false,"first_name":"Alice"},"chat":{"id":%d,"type":"private"},"text":%q,"entities":[{"type":"bot_command","offset":0,"length":6}]}}`,
		messageID, time.Now().Unix(), alice, alice, cmd)
}

func TestRenumberedUpdateIsNotTakenForAReplay(t *testing.T) {
	t.Parallel()
	r := newRig(t)
	first := r.srv.PushUpdate(draftUpdate(1, "last week"))
	r.replyContaining(alice, "last week")

	r.quietWeek()
	r.srv.Renumber(first)
	update := draftUpdate(7, "this week") // the same update_id, another message
	r.srv.PushUpdate(update)
	r.replyContaining(alice, "this week")

	// Telegram delivering that same update again (unconfirmed when the bot
	// restarted) is still a replay: nothing is handled twice.
	r.restart()
	r.srv.Renumber(first)
	r.srv.PushUpdate(update)
	r.waitFor("the redelivered update taken and confirmed", func(s *telegramtest.Server) bool {
		calls := s.CallsTo("getUpdates")
		return len(s.PendingUpdates()) == 0 && calls[len(calls)-1].Params["offset"] == fmt.Sprint(first+1)
	})
	r.shutdown() // waits for the handling of everything taken
	drafts := 0
	for _, m := range r.srv.Messages(alice) {
		if strings.Contains(m.Text, "this week") {
			drafts++
		}
	}
	if drafts != 1 {
		t.Errorf("replies to the renumbered draft = %d, want 1", drafts)
	}
}
