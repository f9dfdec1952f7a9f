package telegram_test

import (
	"context"
	"errors"
	"strings"
	"testing"

	"github.com/countersign/countersign/telegram/telegramtest"
	"github.com/countersign/countersign/tools"
)

func TestVerifierBeforeAnyCard(t *testing.T) {
	t.Parallel()
	r := newRig(t)
	r.command(alice, "/send 222 Read it at https://example.com/launch")
	r.replyContaining(alice, "placeholder host example.com")
	r.command(alice, "/send 222 Weekly digest is out")
	r.card(alice)
	r.command(alice, "/send 222 weekly digest is  out")
	r.replyContaining(alice, "same text as operation")
	cards := 0
	for _, m := range r.srv.Messages(alice) {
		if strings.Contains(m.Text, "Approval needed") {
			cards++
		}
	}
	if cards != 1 {
		t.Errorf("cards = %d, want 1: only the clean, first payload reaches a phone", cards)
	}
}

func TestMigratedGroupIsRepairedOnce(t *testing.T) {
	t.Parallel()
	r := newRig(t)
	r.srv.Inject(telegramtest.MigrateTo(-1001234567890).For("sendMessage").InChat(target))
	r.approveSend("to a group that became a supergroup")
	r.waitFor("the delivery to the supergroup", atLeast(1, delivered(-1001234567890)))
	if n := len(r.srv.Messages(target)); n != 0 {
		t.Errorf("deliveries to the old id = %d, want 0", n)
	}
}

func TestRejectedEntitiesAreARepairByPlainText(t *testing.T) {
	t.Parallel()
	r := newRig(t)
	_, err := r.bot.Sender().Send(context.Background(), tools.Message{Target: "222", Text: "<b>unclosed", ParseMode: "HTML"})
	var rep *tools.RepairError
	if !errors.As(err, &rep) || rep.Fix == nil || !rep.Fix.PlainText {
		t.Fatalf("Send with broken HTML = %v, want a repair to plain text", err)
	}
	if n := len(r.srv.Messages(target)); n != 0 {
		t.Errorf("deliveries = %d, want 0", n)
	}
}
