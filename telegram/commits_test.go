package telegram_test

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/countersign/countersign/policy"
	"github.com/countersign/countersign/telegram/telegramtest"
)

// TestTelegramSendDurableCommits pins what one approved /send costs the journal
// over Telegram, with one approver: the command's update stored before it is
// confirmed, the call journaled with its approval before its card shows, the
// card recorded, then the tap's update stored, the decision, committing and
// committed. Marking an update handled waits for no fsync of its own (a replay of
// it is a no-op). A step that gains a durable write fails here.
func TestTelegramSendDurableCommits(t *testing.T) {
	t.Parallel()
	r := newRig(t, withPolicy(func(p *policy.Policy) { p.Access.Approvers = []policy.UserID{alice} }))
	quiet := func(what string) {
		t.Helper()
		deadline := time.Now().Add(10 * time.Second)
		for {
			left, err := r.j.Unhandled(context.Background())
			if err == nil && len(left) == 0 {
				return
			}
			if time.Now().After(deadline) {
				t.Fatalf("waiting for %s: %d updates unhandled, %v", what, len(left), err)
			}
			time.Sleep(5 * time.Millisecond)
		}
	}
	quiet("the start")
	before := r.j.Commits()
	r.command(alice, "/send 222 one approved send")
	card := r.card(alice)
	quiet("the command handled")
	asked := r.j.Commits() - before
	r.tap(alice, card, "Approve")
	r.waitFor("the card edited with the outcome", func(s *telegramtest.Server) bool {
		m, _ := s.Message(alice, card.MessageID)
		return strings.Contains(m.Text, "Approved by") && strings.Contains(m.Text, "message 1")
	})
	quiet("the tap handled")
	sent := r.j.Commits() - before - asked
	// command: inbox row, task + operation + approval, card record.
	if asked != 3 {
		t.Errorf("command to card: %d durable commits, want 3 (inbox row, call with its approval, card record)", asked)
	}
	// tap: inbox row, approved, committing, committed.
	if sent != 4 {
		t.Errorf("tap to delivery: %d durable commits, want 4 (inbox row, approved, committing, committed)", sent)
	}
}
