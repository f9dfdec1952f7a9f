package verifier

import (
	"net/url"
	"strings"
	"unicode"
	"unicode/utf16"

	"golang.org/x/text/unicode/norm"
)

// Rendered is a text as its recipient sees it: the markup of its parse mode read by
// the verifier's one parser, so that what is checked, counted and shown to an
// approver is the same reading of the text.
type Rendered struct {
	// Visible is the text with its markup removed and its entities decoded.
	Visible string
	// Links are the links the markup hides behind other words, in order.
	Links []Link
	// Problem is the first markup mistake Telegram would reject, nil when none.
	Problem error
}

// Link is one link of a text's markup: the words the recipient sees and where a tap
// goes. Target is decoded (an href written "&#104;ttps://…" is "https://…").
type Link struct {
	Text, Target string
}

// Render reads text in parseMode ("", "HTML" or "MarkdownV2"); another mode, like
// none, is read as plain text.
func Render(text, parseMode string) Rendered {
	switch parseMode {
	case "HTML":
		h := scanHTML(text)
		return Rendered{Visible: h.text.String(), Links: h.links, Problem: h.problem}
	case "MarkdownV2":
		m := scanMarkdownV2(text)
		return Rendered{Visible: m.text.String(), Links: m.links, Problem: m.problem}
	}
	return Rendered{Visible: text}
}

// Units is the length of s in UTF-16 code units, the unit of Telegram's limits and
// entity offsets. Every count against a Telegram limit goes through it.
func Units(s string) int {
	n := 0
	for _, r := range s {
		n += utf16.RuneLen(r)
	}
	return n
}

// Length is the length of text as Telegram counts it against its limits: UTF-16
// code units of the text after its markup is parsed (4096 for a message, 1024 for a
// caption).
func Length(text, parseMode string) int {
	return Units(Render(text, parseMode).Visible)
}

func targets(links []Link) []string {
	var hrefs []string
	for _, l := range links {
		hrefs = append(hrefs, l.Target)
	}
	return hrefs
}

// Disguised reports whether the link's words name an address on another host than
// the one a tap opens: "https://bank.com/login" over https://evil.net/login. Words
// that name no address are not a disguise; they say nothing about where they go.
func (l Link) Disguised() bool {
	shown := shownHost(l.Text)
	return shown != "" && shown != targetHost(l.Target)
}

// shownHost is the host of the first address in text, as a reader would take it:
// a URL with a scheme, or a name Telegram links without one; "" when there is none.
func shownHost(text string) string {
	if m := urlInText.FindString(text); m != "" {
		if u, err := url.Parse(trimURL(m)); err == nil && hostOf(u) != "" {
			return strings.TrimPrefix(hostOf(u), "www.")
		}
	}
	for _, b := range bareNames(text) {
		if b.link {
			return strings.TrimPrefix(b.host, "www.")
		}
	}
	return ""
}

// targetHost is the host a link target opens, read as Telegram reads it (no
// scheme: http://); "" for a target with no host (tg:, mailto:).
func targetHost(target string) string {
	raw := strings.TrimSpace(target)
	if !hasScheme.MatchString(raw) || hostPort.MatchString(raw) {
		raw = "http://" + raw
	}
	u, err := url.Parse(raw)
	if err != nil {
		return ""
	}
	return strings.TrimPrefix(hostOf(u), "www.")
}

// Seen is text as its recipient reads it, for comparing two texts: rendered in its
// parse mode, without the characters that show nothing (zero-width spaces and
// joiners, soft hyphens, direction marks and other format characters), in Unicode's
// composed form (NFC), trimmed, with each run of white space as one space.
func Seen(text, parseMode string) string {
	visible := strings.Map(func(r rune) rune {
		if unicode.Is(unicode.Cf, r) {
			return -1
		}
		return r
	}, Render(text, parseMode).Visible)
	return strings.Join(strings.Fields(norm.NFC.String(visible)), " ")
}
