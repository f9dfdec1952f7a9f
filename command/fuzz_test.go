package command_test

import (
	"strings"
	"testing"

	"github.com/countersign/countersign/command"
)

// FuzzParse: no line makes Parse panic, and the text of a /send is exactly what
// followed the target, so nothing is added to or dropped from a message.
func FuzzParse(f *testing.F) {
	for _, seed := range []string{"/send 222 hello", "/send -100 a\nb", "/publish@bot @news  x ", "/resolve op-1 delivered", "/draft", "//", "/send\t1\t\t"} {
		f.Add(seed)
	}
	f.Fuzz(func(t *testing.T, line string) {
		c, err := command.Parse(line)
		if err != nil || c.Name != "send" {
			return
		}
		i := strings.Index(line, c.Target)
		if i < 0 || !strings.HasSuffix(line, c.Text) || len(line)-len(c.Text) <= i+len(c.Target) {
			t.Fatalf("Parse(%q) = target %q text %q: the text is not what followed the target", line, c.Target, c.Text)
		}
	})
}
