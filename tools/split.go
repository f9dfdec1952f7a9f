package tools

import (
	"strings"
	"unicode/utf16"

	"github.com/countersign/countersign/action"
	"github.com/countersign/countersign/verifier"
)

// MaxMessageUnits is Telegram's limit on a message's text, in UTF-16 code units.
const MaxMessageUnits = 4096

// MaxShownMessages is the most messages an approval card's previews may take
// for a text that is not itself sent as messages (an HTTP request's body, as
// the card shows it indented): more cannot be read whole on a phone, so such
// a payload is refused at prepare, before anyone is asked.
const MaxShownMessages = 8

// Previews is p's text as an approval card's previews show it, when it does not
// fit in the card: each message it goes out as, and a text that does not go out
// as messages (an HTTP body) cut to Telegram's limit, so that every byte reaches
// the approver.
func Previews(p action.Payload) []string {
	var out []string
	for _, m := range p.Messages() {
		out = append(out, Split(m, MaxMessageUnits)...)
	}
	return out
}

// Split cuts text into parts of at most limit UTF-16 code units (the unit Telegram
// counts in), preferring a paragraph break, then a line break, then a space, and
// cutting inside a word only when a word is longer than a part. Concatenated, the
// parts are exactly the text: every separator stays at the end of its part. A text
// within the limit is one part.
func Split(text string, limit int) []string {
	var parts []string
	for Units(text) > limit {
		cut := prefixWithin(text, limit)
		if i := lastBoundary(text[:cut]); i > 0 {
			cut = i
		}
		parts = append(parts, text[:cut])
		text = text[cut:]
	}
	return append(parts, text)
}

// Units is the length of s in UTF-16 code units, as Telegram counts it: the
// verifier's count (verifier.Units), the one every limit is checked with. A text
// with a parse mode is counted after its markup is parsed: verifier.Length.
func Units(s string) int { return verifier.Units(s) }

// prefixWithin returns the byte length of the longest prefix of s within limit units.
func prefixWithin(s string, limit int) int {
	n := 0
	for i, r := range s {
		if n += utf16.RuneLen(r); n > limit {
			return i
		}
	}
	return len(s)
}

// lastBoundary returns the byte offset just after the best break in s: the last
// paragraph break, else line break, else space; 0 when there is none.
func lastBoundary(s string) int {
	for _, sep := range []string{"\n\n", "\n", " "} {
		if i := strings.LastIndex(s, sep); i > 0 {
			return i + len(sep)
		}
	}
	return 0
}
