package command

import (
	"fmt"
	"strings"
	"unicode"

	"github.com/countersign/countersign/action"
	"github.com/countersign/countersign/tools"
	"github.com/countersign/countersign/verifier"
)

// Visible is s as an approver must read it, on a card or in a terminal: every
// character that moves the cursor, clears or recolours a terminal, reorders the
// text or shows nothing (a carriage return, ESC and the other C0 and C1 controls,
// the bidi overrides and isolates, direction marks, zero-width spaces, soft
// hyphens, line and paragraph separators) is written as a visible escape, \r or
// <U+202E>, so that no part of the text can hide another. Line breaks and tabs
// stay; a zero-width joiner inside an emoji sequence stays, as it only joins.
func Visible(s string) string {
	if !strings.ContainsFunc(s, hidden) {
		return s
	}
	var b strings.Builder
	prev := rune(0)
	for _, r := range s {
		switch {
		case r == '\r':
			b.WriteString(`\r`)
		case r == '\u200d' && (unicode.Is(unicode.So, prev) || prev == '\ufe0f'):
			b.WriteRune(r)
		case hidden(r):
			fmt.Fprintf(&b, "<U+%04X>", r)
		default:
			b.WriteRune(r)
		}
		prev = r
	}
	return b.String()
}

// hidden reports whether r is shown by Visible as an escape.
func hidden(r rune) bool {
	switch {
	case r == '\n' || r == '\t':
		return false
	case unicode.IsControl(r), unicode.Is(unicode.Cf, r):
		return true
	}
	return r == '\u2028' || r == '\u2029'
}

// EscapesNote tells an approver about the characters of s that Visible writes as
// escapes, "" when s has none. escaped: s is shown through Visible, and the note
// says how to read the escapes; else s is shown raw elsewhere (a card's previews),
// and the note names each such character and how many times it occurs.
func EscapesNote(s string, escaped bool) string {
	if !strings.ContainsFunc(s, hidden) {
		return ""
	}
	if escaped {
		return "(Characters that show nothing, move the cursor or reorder the text are written as \\r or <U+…>; they are sent as they are.)"
	}
	var seen []string
	count := map[string]int{}
	for _, r := range s {
		if e := Visible(string(r)); e != string(r) {
			if count[e] == 0 {
				seen = append(seen, e)
			}
			count[e]++
		}
	}
	for i, e := range seen {
		seen[i] = fmt.Sprintf("%s ×%d", e, count[e])
	}
	return "The text holds characters that show nothing, move the cursor or reorder the text: " + strings.Join(seen, ", ") + "."
}

// Characters is the length of a payload's text as Telegram counts it: UTF-16 code
// units of what its recipient sees (verifier.Length).
func Characters(p action.Payload) int { return verifier.Length(p.Text, p.ParseMode) }

// Rendering is what an approver is shown of a text with a parse mode beyond its
// source, which hides what it does: the text its recipient will see, and every link
// as the words the recipient sees and the real, decoded target a tap opens, flagged
// when the words name another address. It is "" for plain text, which is seen as
// written. Both surfaces show it under the source.
func Rendering(text, parseMode string) string {
	if parseMode == "" {
		return ""
	}
	r := verifier.Render(text, parseMode)
	var b strings.Builder
	fmt.Fprintf(&b, "The recipient will see (%d characters):\n%s", verifier.Units(r.Visible), Visible(r.Visible))
	if note := EscapesNote(r.Visible, true); note != "" && EscapesNote(text, true) == "" {
		b.WriteString("\n" + note) // an entity such as &#8238; hid it in the source
	}
	b.WriteString(Links(r.Links))
	return b.String()
}

// Links lists links as "words" -> target, one a line, under a heading; "" for
// none. A link whose words name another address than its target is flagged.
func Links(links []verifier.Link) string {
	if len(links) == 0 {
		return ""
	}
	var b strings.Builder
	fmt.Fprintf(&b, "\n\nLinks (%d): the words the recipient sees -> where a tap really goes", len(links))
	for i, l := range links {
		fmt.Fprintf(&b, "\n%d. %q -> %s", i+1, Visible(l.Text), Visible(l.Target))
		if l.Disguised() {
			b.WriteString("  ⚠ the words show another address than the link opens")
		}
	}
	return b.String()
}

// Facts is what an approver must know of a payload beyond its text (see
// tools.Shown), its characters that show nothing written as escapes: "" when
// there is nothing to say.
func Facts(s tools.Shown) string {
	var lines []string
	for _, f := range s.Facts {
		lines = append(lines, Visible(f))
	}
	if s.Omitted != "" {
		lines = append(lines, "Not shown here: "+s.Omitted)
	}
	if len(lines) == 0 {
		return ""
	}
	return strings.Join(lines, "\n")
}

// TextLabel is what a card calls the payload's text: the tool's word for it,
// "" when the payload sends none.
func TextLabel(s tools.Shown, p action.Payload) string {
	if p.Text == "" {
		return ""
	}
	return s.TextLabel
}
