package telegram_test

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/countersign/countersign/telegram/telegramtest"
)

// Among replicas, an approval whose card is held up (Telegram takes seconds to
// answer the send to one approver) stays marked as shown here: the process
// renews its mark while the card waits, so that the leader's watch, which
// shows what a live replica marked more than a lease ago, does not put a second
// card before that approver.
func TestAHeldUpCardKeepsItsApprovalMarked(t *testing.T) {
	t.Parallel()
	r := newRig(t, withReplica(600*time.Millisecond))
	ctx := context.Background()
	r.srv.Inject(telegramtest.Delay(2 * time.Second).For("sendMessage").InChat(bob))
	r.command(alice, "/send 222 held up on its way to bob")
	card := r.card(alice)
	opID := opPattern.FindString(card.Text[strings.Index(card.Text, "Operation: ")+1:])
	first, err := r.j.LatestApproval(ctx, opID)
	if err != nil {
		t.Fatal(err)
	}
	r.waitFor("the approval's mark renewed while bob's card is held up", func(s *telegramtest.Server) bool {
		a, err := r.j.LatestApproval(ctx, opID)
		return err == nil && a.ShownBy == first.ShownBy && a.Shown.After(first.Shown)
	})
	if n := len(cardsIn(r.srv, bob)); n != 0 {
		t.Fatalf("bob has %d cards before the mark was renewed; the send was to be held up", n)
	}
	r.card(bob)
	if n := len(cardsIn(r.srv, bob)); n != 1 {
		t.Errorf("bob has %d cards, want one", n)
	}
}
