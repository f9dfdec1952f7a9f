package telegram_test

import (
	"database/sql"
	"fmt"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/countersign/countersign/command"
	"github.com/countersign/countersign/journal"
	"github.com/countersign/countersign/policy"
	"github.com/countersign/countersign/telegram/telegramtest"
)

func TestAFullDiskLosesNoUpdate(t *testing.T) {
	t.Parallel()
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
	t.Parallel()
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

// A command whose update was stored but whose task a full disk kept out of the
// journal is taken again, without a restart, once there is room: the person is
// told once that it waits, it gets its one card, and it is delivered once.
func TestACommandAFullDiskStoppedGoesOnWhenSpaceReturns(t *testing.T) {
	t.Parallel()
	// A task keeps its policy: a long house rule makes that more than a page, while
	// the update fits in the room the inbox's page has left.
	r := newRig(t, withPolicy(func(p *policy.Policy) {
		p.Verify.Rules = append(p.Verify.Rules, policy.Rule{Tool: "commit_publish_post", Reason: strings.Repeat("channel posts follow the style guide. ", 200)})
	}))
	file := filepath.Join(r.dir, "journal.db")
	db, err := sql.Open("sqlite3", file+"?_busy_timeout=5000")
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	// The journal is frozen at its size, with pages the bot cannot use to give back.
	if _, err := db.Exec("CREATE TABLE chaos_filler (b BLOB)"); err != nil {
		t.Fatal(err)
	}
	if _, err := db.Exec("INSERT INTO chaos_filler VALUES (zeroblob(65536))"); err != nil {
		t.Fatal(err)
	}
	r.jopts = []journal.Option{journal.WithSizeLimit(1)}
	r.restart()

	r.command(alice, "/send 222 after the disk filled")
	r.replyContaining(alice, "disk is full")
	if logs := r.logs.String(); !strings.Contains(logs, "database or disk is full") {
		t.Fatalf("the task was not stopped by a full disk, so this tests nothing:\n%s", logs)
	}
	if _, err := db.Exec("DELETE FROM chaos_filler"); err != nil { // space comes back
		t.Fatal(err)
	}
	card := r.card(alice)
	if !strings.Contains(card.Text, "after the disk filled") {
		t.Fatalf("card = %q, want the command that waited", card.Text)
	}
	r.tap(alice, card, "Approve")
	r.waitFor("the delivery", atLeast(1, delivered(target)))
	told := 0
	for _, m := range r.srv.Messages(alice) {
		if strings.Contains(m.Text, "disk is full") {
			told++
		}
	}
	if got := r.srv.Messages(target); len(got) != 1 || told != 1 {
		t.Errorf("deliveries = %d, told it waits %d times; want 1 and 1", len(got), told)
	}
}
