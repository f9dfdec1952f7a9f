package verifier

import "unicode/utf8"

// payload is an Input with its markup read once: the text as Telegram shows it, the
// link targets the markup hides, and the first markup problem.
type payload struct {
	in      Input
	visible string
	hrefs   []string
	markup  error
}

func newPayload(in Input) *payload {
	p := &payload{in: in, visible: in.Text}
	switch in.ParseMode {
	case "HTML":
		p.visible, p.hrefs, p.markup = parseHTML(in.Text)
	case "MarkdownV2":
		p.visible, p.hrefs, p.markup = parseMarkdownV2(in.Text)
	}
	return p
}

// length is the visible text's length in UTF-16 code units, the unit of Telegram's
// limits.
func (p *payload) length() int {
	return utf16Len(p.visible)
}

func utf16Len(s string) int {
	n := 0
	for _, r := range s {
		n++
		if r > 0xFFFF {
			n++
		}
	}
	return n
}

// charAt is the 1-based character position of byte offset i in s, for reasons.
func charAt(s string, i int) int {
	return utf8.RuneCountInString(s[:i]) + 1
}
