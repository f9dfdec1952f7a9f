package demo_test

import (
	"net/url"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/countersign/countersign/demo"
)

// A card is drawn with its buttons numbered; a number, a or r taps, as the
// person, the button it names; an edit that adds a line shows what it added,
// and the buttons it took away can no longer be tapped.
func TestTerminalDrawsCardsAndTapsTheirButtons(t *testing.T) {
	s := newScene(t)
	ty := startTerminal(t, s)
	card := send(t, s, you, "Approval needed: send_message\nhello", keyboard("✅ Approve", "ap1:ap-1:a", "❌ Reject", "ap1:ap-1:r"))
	ty.see("[bot → you]\n  Approval needed: send_message\n  hello\n  [1] ✅ Approve  [2] ❌ Reject\n")

	tests := []struct {
		line, data string
	}{
		{"2", "ap1:ap-1:r"},
		{"a", "ap1:ap-1:a"},
		{"r", "ap1:ap-1:r"},
		{"1", "ap1:ap-1:a"},
	}
	for _, tt := range tests {
		at := ty.typeLine(tt.line)
		u := nextUpdate(t, s)
		if u.CallbackQuery == nil || u.CallbackQuery.Data != tt.data || u.CallbackQuery.From.ID != you || u.CallbackQuery.Message.MessageID != card {
			t.Errorf("typing %q sent %+v, want user %d's tap on %q of message %d", tt.line, u.CallbackQuery, you, tt.data, card)
		}
		ty.seeAfter(at, "(you tap ")
	}

	at := ty.typeLine("") // nothing happens
	edit(t, s, you, card, "Approval needed: send_message\nhello\n\n✅ Approved by You (111).", "")
	ty.seeAfter(at, "[bot → you, edited: adds]\n  … ✅ Approved by You (111).\n")
	at = ty.typeLine("1")
	ty.seeAfter(at, "(no button 1 now")
	at = ty.typeLine("a")
	ty.seeAfter(at, "(no card with Approve open)")
	if n := len(s.Server.PendingUpdates()); n != 0 {
		t.Errorf("%d updates after taps on buttons no longer there, want none", n)
	}

	at = ty.typeLine("")
	send(t, s, target, "hello", "")
	ty.seeAfter(at, "[bot → Alex (222)]\n  hello\n")
}

// A line is a message in the person's private chat, and the answer to a
// prompt that asks for a reply is a reply to it.
func TestTerminalSaysWhatIsTyped(t *testing.T) {
	s := newScene(t)
	ty := startTerminal(t, s)
	ty.typeLine("/send 222 hello")
	if u := nextUpdate(t, s); u.Message == nil || u.Message.Text != "/send 222 hello" || u.Message.ReplyTo != nil {
		t.Fatalf("update %+v, want the person's message", u)
	}
	at := ty.typeLine("")
	prompt := send(t, s, you, "✏️ Reply to this message with the new text", `{"force_reply":true}`)
	ty.seeAfter(at, "(your next line is the reply)")
	ty.typeLine("hello again")
	if u := nextUpdate(t, s); u.Message == nil || u.Message.Text != "hello again" || u.Message.ReplyTo == nil || u.Message.ReplyTo.MessageID != prompt {
		t.Fatalf("update %+v, want a reply to message %d", u, prompt)
	}
	ty.typeLine("and a new message")
	if u := nextUpdate(t, s); u.Message == nil || u.Message.ReplyTo != nil {
		t.Fatalf("update %+v, want a message that replies to nothing: the prompt was answered", u)
	}
	if err := ty.end(); err != nil {
		t.Errorf("Terminal = %v at the end of its input, want nil", err)
	}
}

// demo-unknown makes Telegram take the next send to the target and lose its
// answer; the notice that follows brings the envelope on screen, and its
// resolution the envelope as rewritten.
func TestTerminalShowsTheEnvelopeOfAnUnknownOutcome(t *testing.T) {
	s := newScene(t)
	ty := startTerminal(t, s)
	at := ty.typeLine(demo.LoseCommand)
	ty.seeAfter(at, "(armed: ")
	at = ty.typeLine(demo.LoseCommand)
	ty.seeAfter(at, "(already armed")
	if !s.Armed() {
		t.Fatal("not armed after " + demo.LoseCommand)
	}
	if _, err := call(t, s, "sendMessage", url.Values{"chat_id": {strconv.Itoa(target)}, "text": {"lost"}}); err == nil {
		t.Fatal("the send to the target got its answer, want it lost")
	}
	if msgs := s.Server.Messages(target); len(msgs) != 1 || !msgs[0].ReplyLost {
		t.Fatalf("messages in the target chat %+v, want one that arrived with its answer lost", msgs)
	}
	if s.Armed() {
		t.Error("still armed after the send lost its answer")
	}
	ty.see("[bot → Alex (222)]\n  lost\n")
	ty.see("  (Telegram took this message to Alex (222), and its answer to the bot was lost)\n")
	at = ty.typeLine("")
	send(t, s, target, "the next one", "") // answered: the loss was for one send
	ty.seeAfter(at, "[bot → Alex (222)]\n  the next one\n")
	if strings.Contains(ty.screen.String(), "Alex (222), edited") {
		t.Errorf("a lost answer drawn as an edit:\n%s", ty.screen.String())
	}

	unknownEnvelope(t, s, "op-abc123")
	notice := send(t, s, you, "Outcome unknown for op-abc123", keyboard("It arrived", "rs1:op-abc123:d", "It did not arrive", "rs1:op-abc123:n"))
	ty.see("[vault] op-abc123: the envelope of its unknown outcome is in the vault, " + s.Vault.Dir())
	ty.see("  status: unknown\n")
	ty.see("[1] It arrived  [2] It did not arrive")

	at = ty.typeLine("")
	if _, err := s.Vault.Resolve("op-abc123", true, "You (111)", time.Now()); err != nil {
		t.Fatal(err)
	}
	edit(t, s, you, notice, "Outcome unknown for op-abc123\n\nResolved.", "")
	ty.seeAfter(at, "[vault] op-abc123: its envelope changed")
	ty.seeAfter(at, "  status: committed\n")
	if strings.Count(ty.screen.String(), "[vault]") != 2 {
		t.Errorf("the envelope drawn %d times, want twice (written, resolved):\n%s", strings.Count(ty.screen.String(), "[vault]"), ty.screen.String())
	}
}

func TestLoseNextAnswerArmsOneLoss(t *testing.T) {
	s := newScene(t)
	if s.Armed() {
		t.Fatal("armed before anything")
	}
	if !s.LoseNextAnswer() || s.LoseNextAnswer() {
		t.Fatal("LoseNextAnswer twice = want true, then false while armed")
	}
	send(t, s, you, "to the person: not the target", "")
	if !s.Armed() {
		t.Fatal("a send to another chat took the loss")
	}
	if _, err := call(t, s, "sendMessage", url.Values{"chat_id": {strconv.Itoa(target)}, "text": {"lost"}}); err == nil {
		t.Fatal("the send to the target got its answer")
	}
	if !s.LoseNextAnswer() {
		t.Error("LoseNextAnswer after the loss fired = false, want armed again")
	}
	if n := len(s.Server.Messages(target)); n != 1 {
		t.Errorf("%d messages in the target chat, want the one that lost its answer", n)
	}
}
