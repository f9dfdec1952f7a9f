package telegram_test

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/countersign/countersign/agent/agenttest"
)

// The card counts a text as Telegram does, in UTF-16 code units of what the
// recipient sees: a Cyrillic letter is one, an emoji beyond the Basic Multilingual
// Plane two; not bytes.
func TestTheCardCountsCharactersAsTelegramDoes(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name, text, want string
	}{
		{"emoji and Cyrillic on the card", "Привет 👋 мир", "(13 characters)"},
		{"a long Cyrillic text in previews", strings.Repeat("ж", 5000), "(5000 characters)"},
		{"a long emoji text in previews", strings.Repeat("😀", 2100), "(4200 characters)"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			r := newRig(t)
			r.command(alice, "/send 222 "+tt.text)
			card := r.card(alice)
			if !strings.Contains(card.Text, tt.want) {
				t.Errorf("card lacks %q:\n%s", tt.want, excerpt(card.Text))
			}
		})
	}
}

// excerpt is the start of a long card, for a failure message.
func excerpt(s string) string {
	if r := []rune(s); len(r) > 600 {
		return string(r[:600]) + "…"
	}
	return s
}

// A card for a text with a parse mode says what its recipient will see and where
// each link really goes, its href decoded, and flags words that name another
// address: the source alone, "<a href="&#104;ttps://…">https://bank.com/login</a>",
// shows an approver the bank.
func TestTheCardNamesEveryLinksRealTarget(t *testing.T) {
	t.Parallel()
	text := `Please <b>confirm</b> at <a href="&#104;ttps://evil-login.net/login">https://bank.com/login</a> or ask <a href="tg://user?id=42">support</a>.`
	in, _ := json.Marshal(map[string]string{"chat_id": "222", "text": text, "parse_mode": "HTML"})
	model := agenttest.NewServer(t, agenttest.Message("tool_use", "Asking them to confirm.", agenttest.Call("commit_send_message", string(in))))
	r := newRig(t, withModel(model.URL))
	r.command(alice, "ask 222 to confirm their login")
	card := r.card(alice)
	for _, want := range []string{
		"The recipient will see (56 characters):\nPlease confirm at https://bank.com/login or ask support.",
		`1. "https://bank.com/login" -> https://evil-login.net/login  ⚠ the words show another address than the link opens`,
		`2. "support" -> tg://user?id=42` + "\n",
	} {
		if !strings.Contains(card.Text+"\n", want) {
			t.Errorf("card lacks %q:\n%s", want, card.Text)
		}
	}
}

// The card writes the characters that could hide part of a text as visible
// escapes: a carriage return, ESC and a right-to-left override.
func TestTheCardShowsControlCharacters(t *testing.T) {
	t.Parallel()
	r := newRig(t)
	r.command(alice, "/send 222 Pay invoice 42\rPay invoice 666 \x1b[8mhidden\x1b[0m \u202egnp.exe")
	card := r.card(alice)
	want := `Pay invoice 42\rPay invoice 666 <U+001B>[8mhidden<U+001B>[0m <U+202E>gnp.exe`
	if !strings.Contains(card.Text, want) {
		t.Errorf("card lacks %q:\n%s", want, card.Text)
	}
	if strings.ContainsAny(card.Text, "\r\x1b\u202e") {
		t.Errorf("card carries a raw control character: %q", card.Text)
	}
}
