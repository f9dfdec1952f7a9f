package console_test

import (
	"context"
	"strings"
	"testing"

	"github.com/countersign/countersign/journal"
)

// The prompt shows the text as it must be read: a carriage return, ESC and a
// right-to-left override written as escapes, never acted on by the terminal; and
// its length as Telegram counts it.
func TestThePromptShowsControlCharactersAndTheLength(t *testing.T) {
	out, _ := run(t, "/send 222 Pay invoice 42\rPay invoice 666 \x1b[8mhidden\x1b[0m \u202egnp.exe 👋\nn\n")
	prompt := out[strings.Index(out, "Approve send_message"):strings.Index(out, "[y/n")]
	for _, want := range []string{
		"Approve send_message to 222? (57 characters)",
		`Pay invoice 42\rPay invoice 666 <U+001B>[8mhidden<U+001B>[0m <U+202E>gnp.exe 👋`,
	} {
		if !strings.Contains(prompt, want) {
			t.Errorf("prompt lacks %q:\n%s", want, prompt)
		}
	}
	if strings.ContainsAny(prompt, "\r\x1b\u202e") {
		t.Errorf("prompt carries a raw control character: %q", prompt)
	}
}

// A line a terminal may have cut (at its canonical-mode limit, 4095 bytes and the
// newline, or 4096 without it), or one too long to read, is refused whole with a
// reason: nothing of it is carried out, and the lines after it are read as usual.
func TestACutOrOverlongLineIsRefusedAndLosesNothing(t *testing.T) {
	cut := func(n int) string { // "/send 222 " and Cyrillic, n bytes in all
		s := "/send 222 " + strings.Repeat("ж", (n-10)/2)
		return s + strings.Repeat("x", n-len(s))
	}
	tests := []struct {
		name, line, why string
	}{
		{"4095 bytes: a cut paste", cut(4095), "4095 bytes"},
		{"4096 bytes: a cut line", cut(4096), "4096 bytes"},
		{"more than a line may hold", cut(1<<20 + 1), "1048577 bytes"},
		{"far more than a line may hold", cut(3 << 20), "3145728 bytes"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			out, j := run(t, tt.line+"\n/send 333 after it\ny\n")
			if !strings.Contains(out, "Refused, nothing was done: this line is "+tt.why) {
				t.Errorf("no refusal naming %q in:\n%s", tt.why, excerpt(out))
			}
			if strings.Contains(out, "Approve send_message to 222") {
				t.Errorf("the cut line was asked about:\n%s", excerpt(out))
			}
			ops, _ := j.Operations(context.Background(), journal.Filter{})
			if len(ops) != 1 || ops[0].Payload.Target != "333" || ops[0].State != journal.Committed {
				t.Errorf("journal = %+v, want only the next line's send, committed", ops)
			}
		})
	}
	// A long line that no terminal cut is read whole.
	long := "/send 222 " + strings.Repeat("ж", 2601) // 5212 bytes, 2601 characters
	out, j := run(t, long+"\nn\n")
	if !strings.Contains(out, "Approve send_message to 222? (2601 characters)") {
		t.Errorf("a whole 5212-byte line was not asked about:\n%s", excerpt(out))
	}
	if ops, _ := j.Operations(context.Background(), journal.Filter{}); len(ops) != 1 || ops[0].Payload.Text != strings.Repeat("ж", 2601) {
		t.Errorf("journal = %d operations, want the whole text once", len(ops))
	}
}

func excerpt(s string) string {
	if len(s) > 800 {
		return s[:400] + " … " + s[len(s)-400:]
	}
	return s
}
