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
	r := Render(in.Text, in.ParseMode)
	return &payload{in: in, visible: r.Visible, hrefs: targets(r.Links), markup: r.Problem}
}

// length is the visible text's length in UTF-16 code units, the unit of Telegram's
// limits.
func (p *payload) length() int {
	return Units(p.visible)
}

// charAt is the 1-based character position of byte offset i in s, for reasons.
func charAt(s string, i int) int {
	return utf8.RuneCountInString(s[:i]) + 1
}
