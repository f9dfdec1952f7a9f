package command_test

import (
	"errors"
	"slices"
	"strings"
	"testing"
	"unicode"
	"unicode/utf8"

	"github.com/countersign/countersign/command"
)

// FuzzParse: no line makes Parse panic; every failure is a usage error; what it
// accepts is a command /help lists; the text of /send, /publish and /draft is
// exactly what followed one separator after the target (or the name), so nothing
// is added to or dropped from a message; an operation id is one word; and the
// spaces and tabs before the slash change nothing.
func FuzzParse(f *testing.F) {
	for _, seed := range []string{
		"/send 222 hello", "/send -100 a\nb", "/publish@bot @news  x ", "/resolve op-1 delivered",
		"/draft", "//", "/send\t1\t\t", "/SEND 222 Hi", "  /ops", "/send 222\u00a0non-breaking",
		"/send 222\u2028line separator", "/resolve  op-1   not_delivered ", "/cancel op-1\n",
		"/send send send", "/send @x\xff\xfe", "/draft\n\nhello", "/stop@countersign_bot",
		"/retry op-7k2m9q", "/send 222 " + strings.Repeat("é", 100),
		// Lines as Telegram delivers them (telegram/standin/testdata).
		"test", "/ops", "/help",
	} {
		f.Add(seed)
	}
	names := make([]string, 0, len(command.Usage))
	for _, u := range command.Usage {
		names = append(names, u.Name)
	}
	f.Fuzz(func(t *testing.T, line string) {
		c, err := command.Parse(line)
		again, err2 := command.Parse(" \t" + line)
		if c != again || (err == nil) != (err2 == nil) {
			t.Fatalf("Parse(%q) = %+v, %v; with spaces before it %+v, %v", line, c, err, again, err2)
		}
		if err != nil {
			if !errors.Is(err, command.ErrUsage) {
				t.Fatalf("Parse(%q) error %v is not a usage error", line, err)
			}
			return
		}
		if !slices.Contains(names, c.Name) {
			t.Fatalf("Parse(%q) accepted /%s, which /help does not list", line, c.Name)
		}
		switch c.Name {
		case "send", "publish":
			if c.Target == "" || strings.ContainsFunc(c.Target, unicode.IsSpace) {
				t.Fatalf("Parse(%q): target %q is not one word", line, c.Target)
			}
			checkText(t, line, c.Target, c.Text)
		case "draft":
			checkText(t, line, "", c.Text)
		case "resolve", "retry", "cancel":
			if c.OpID == "" || strings.ContainsFunc(c.OpID, unicode.IsSpace) || !strings.Contains(line, c.OpID) {
				t.Fatalf("Parse(%q): operation id %q is not one word of the line", line, c.OpID)
			}
		}
		if c.Delivered && c.Name != "resolve" {
			t.Fatalf("Parse(%q): /%s says delivered", line, c.Name)
		}
	})
}

// checkText asserts that line ends with before, one whitespace character, and text,
// and that text is not blank.
func checkText(t *testing.T, line, before, text string) {
	t.Helper()
	if strings.TrimSpace(text) == "" {
		t.Fatalf("Parse(%q) accepted a blank text", line)
	}
	head, ok := strings.CutSuffix(line, text)
	if !ok {
		t.Fatalf("Parse(%q): text %q is not the end of the line", line, text)
	}
	sep, size := utf8.DecodeLastRuneInString(head)
	if size == 0 || !unicode.IsSpace(sep) || !strings.HasSuffix(head[:len(head)-size], before) {
		t.Fatalf("Parse(%q): text %q does not follow %q and one separator", line, text, before)
	}
}
