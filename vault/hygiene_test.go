package vault_test

import (
	"bytes"
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/countersign/countersign/vault"
)

var (
	botToken = "123456789:AAHdqTcvCH1vGWJxfSeofSAs0K5PALDsaw"
	antKey   = "sk-ant-api03-" + strings.Repeat("R2D2C3POx9-", 8) + "abcDE" + "AA"
)

func TestMask(t *testing.T) {
	tests := []struct{ in, want string }{
		{"call +1 415 555 0100 now", "call [phone] now"},
		{"or +44 20 7946 0958.", "or [phone]."},
		{"tel 4155550100", "tel [phone]"},
		{"(415) 555-0100", "[phone]"},
		{"mail alice@example.com!", "mail [email]!"},
		{"a.b+tag@mail.example.co.uk", "[email]"},
		{"card 4111 1111 1111 1111 exp", "card [card] exp"},
		{"card 4111-1111-1111-1111", "card [card]"},
		{"4111111111111111", "[card]"},
		{"token " + botToken, "token [secret withheld]"},
		{"https://api.telegram.org/bot" + botToken + "/sendMessage", "https://api.telegram.org/bot[secret withheld]/sendMessage"},
		{"key=" + antKey, "key=[secret withheld]"},
		{"sk-proj-" + strings.Repeat("abcdefghijklmnopqrstuvwx", 3) + "T3BlbkFJ" + strings.Repeat("abcdefghijklmnopqrstuvwx", 3), "[secret withheld]"},
		{"AKIAIOSFODNN7EXAMPLE", "[secret withheld]"},
		{"xoxb-1234567890-1234567890123-abcdefghijklmnopqrstuvwx", "[secret withheld]"},
		{"ghp_abcdefghijklmnopqrstuvwxyz0123456789", "[secret withheld]"},
		// What stays: short numbers, times, handles, op ids, a short sk- word.
		{"retry after 30 s, code 429", "retry after 30 s, code 429"},
		{"at 2026-11-30T09:15:02Z", "at 2026-11-30T09:15:02Z"},
		{"@alice in op-7k2m9q", "@alice in op-7k2m9q"},
		{"ask-me later", "ask-me later"},
		{"Привет 🙂", "Привет 🙂"},
	}
	for _, tt := range tests {
		t.Run(tt.in, func(t *testing.T) {
			got := vault.Mask(tt.in)
			if got != tt.want {
				t.Errorf("Mask(%q): got %q, want %q", tt.in, got, tt.want)
			}
			if again := vault.Mask(got); again != got {
				t.Errorf("Mask(Mask(%q)): got %q, want %q", tt.in, again, got)
			}
		})
	}
}

func TestExcerpt(t *testing.T) {
	long := strings.Repeat("word ", 20)
	tests := []struct{ name, in, want string }{
		{"short", "Hello there", "Hello there"},
		{"whitespace collapsed", "  Hello\n\n\tthere  ", "Hello there"},
		{"cut", long, strings.Repeat("word ", 8) + "…"},
		{"cut in runes", strings.Repeat("é", 50), strings.Repeat("é", 40) + "…"},
		{"41 runes kept", strings.Repeat("x", 41), strings.Repeat("x", 41)},
		{"masked before the cut", strings.Repeat("x", 30) + " +1 415 555 0100", strings.Repeat("x", 30) + " [phone]"},
		{"number split over lines", "call 415\n555\n0100", "call [phone]"},
		{"secret before the cut", strings.Repeat("x", 35) + " " + botToken, strings.Repeat("x", 35) + " [sec…"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := vault.Excerpt(tt.in)
			if got != tt.want {
				t.Errorf("Excerpt(%q): got %q, want %q", tt.in, got, tt.want)
			}
			if again := vault.Excerpt(got); again != got {
				t.Errorf("Excerpt(Excerpt(%q)): got %q, want %q", tt.in, again, got)
			}
			if n := utf8.RuneCountInString(got); n > vault.ExcerptRunes+1 {
				t.Errorf("Excerpt length: got %d runes, want at most %d", n, vault.ExcerptRunes+1)
			}
		})
	}
}

func TestWriteHygiene(t *testing.T) {
	v := open(t)
	pii := "Call +1 415 555 0100 or alice@example.com, card 4111 1111 1111 1111"
	e := newEnvelope("op-pii", t0)
	e.Target = "-1001234567890"
	e.Excerpt = pii + " token " + botToken
	e.Response = "Bad Request: " + pii + " key " + antKey
	path := write(t, v, e)
	e2 := newEnvelope("op-secret-only", t0)
	e2.Tool = "commit " + antKey
	write(t, v, e2)
	if _, err := v.Resolve("op-pii", true, "alice@example.com "+botToken, t0); err != nil {
		t.Fatal(err)
	}

	leaks := []string{
		"415 555 0100", "4155550100", "alice@example.com", "alice@",
		"4111 1111 1111 1111", "4111111111111111",
		botToken, "AAHdqTcvCH1vGWJxfSeofSAs0K5PALDsaw", antKey, "R2D2C3POx9y8z7w6v5u4t3s2r1q0p",
	}
	for _, file := range filesUnder(t, v.Dir()) {
		data := readBytes(t, file)
		for _, leak := range leaks {
			if bytes.Contains(data, []byte(leak)) || strings.Contains(file, leak) {
				t.Errorf("%s holds %q:\n%s", file, leak, data)
			}
		}
	}
	note := readBytes(t, path)
	for _, want := range []string{`target: "-1001234567890"`, "secret_withheld: true", "[phone]", "[email]", "[card]", "[secret withheld]"} {
		if !bytes.Contains(note, []byte(want)) {
			t.Errorf("note lacks %q:\n%s", want, note)
		}
	}
	for _, id := range []string{"op-pii", "op-secret-only"} {
		got, _, err := v.Get(id)
		if err != nil || !got.SecretWithheld {
			t.Errorf("Get(%s).SecretWithheld: got %v (%v), want true", id, got.SecretWithheld, err)
		}
	}
}

func TestWriteKeepsCleanFields(t *testing.T) {
	v := open(t)
	e := newEnvelope("op-2026113012345", t0)
	e.Target = "-1001234567890"
	e.PayloadSHA256 = "1234567890123456789012345678901234567890123456789012345678901234"
	e.Resolve(true, "123456789", t0)
	write(t, v, e)
	got, _, err := v.Get(e.OperationID)
	if err != nil {
		t.Fatal(err)
	}
	if got.OperationID != e.OperationID || got.Target != e.Target || got.PayloadSHA256 != e.PayloadSHA256 ||
		got.ResolvedBy != e.ResolvedBy || got.SecretWithheld {
		t.Errorf("Get:\ngot  %#v\nwant %#v", got, e)
	}
}

// Hygiene is idempotent, so rewriting a note (as Resolve does) changes nothing else.
func TestRewriteIsStable(t *testing.T) {
	v := open(t)
	e := newEnvelope("op-1", t0)
	e.Excerpt = strings.Repeat("Hello +1 415 555 0100 ", 5)
	e.Response = "see alice@example.com " + botToken
	path := write(t, v, e)
	first := readBytes(t, path)
	stored, _, err := v.Get("op-1")
	if err != nil {
		t.Fatal(err)
	}
	write(t, v, stored)
	if second := readBytes(t, path); !bytes.Equal(second, first) {
		t.Errorf("rewrite changed the note:\ngot:\n%s\nwant:\n%s", second, first)
	}
}
