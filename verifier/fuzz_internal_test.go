package verifier

import (
	"context"
	"slices"
	"strings"
	"testing"

	"github.com/countersign/countersign/policy"
)

// markupSeeds are texts as people and models write them, markup mistakes included.
var markupSeeds = []string{
	"", "plain text", "Read https://news.org/a.", "(see https://news.org/a_(b))", "evil.net/login and www.evil.net",
	"file.txt, e.g. 1.2.3 and done.Next", "mail ann@news.org", "xhttps://a.org", "http://[::1", "203.0.113.7:8080/x",
	"<b>bold</b> <a href=\"https://news.org\">read</a>", "<a href='/x'>", "<span class=\"tg-spoiler\">s</span>",
	"<tg-emoji emoji-id=\"5368324170671202286\">👍</tg-emoji>", "&lt;&gt;&amp;&quot;&#128512;&#x1F600;&nbsp;&", "<b><i></b></i>",
	"*bold* _italic_ __under__ ~strike~ ||spoiler||", "[read](https://news.org/a\\)b)", "![👍](tg://emoji?id=5368324170671202286)",
	"```go\ncode\\`\n```", "`inline`", ">quote\n**>expandable", "\\", "a.b\\.c", "[unclosed", "*open",
	"évil.рф/путь https://пример.рф", "\xff\xfe.com", "xn--80ak6aa92e.com", "TODO {{name}} lorem ipsum <insert",
}

// FuzzParseHTML: Telegram HTML of any shape reads without a panic into a visible text
// no longer than the source; a text without markup reads as itself; any text escaped
// reads back as itself with no problem; and a link written around it gives back its
// target exactly.
func FuzzParseHTML(f *testing.F) {
	for _, s := range markupSeeds {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		visible, hrefs, _ := parseHTML(s)
		if len(visible) > len(s) {
			t.Fatalf("parseHTML(%q): visible %q is longer than the source", s, visible)
		}
		for _, h := range hrefs {
			if len(h) > len(s) {
				t.Fatalf("parseHTML(%q): href %q is longer than the source", s, h)
			}
		}
		if !strings.ContainsAny(s, "<&") && (visible != s || hrefs != nil) {
			t.Fatalf("parseHTML(%q) without markup = %q, %q", s, visible, hrefs)
		}
		escaped := htmlEscaper.Replace(s)
		if visible, hrefs, err := parseHTML(escaped); visible != s || hrefs != nil || err != nil {
			t.Fatalf("parseHTML(%q) = %q, %q, %v; want the text back", escaped, visible, hrefs, err)
		}
		if s == "" {
			return
		}
		link := `<a href="` + escaped + `">` + escaped + `</a>`
		if visible, hrefs, err := parseHTML(link); visible != s || !slices.Equal(hrefs, []string{s}) || err != nil {
			t.Fatalf("parseHTML(%q) = %q, %q, %v; want the text and its target back", link, visible, hrefs, err)
		}
	})
}

var htmlEscaper = strings.NewReplacer("&", "&amp;", "<", "&lt;", ">", "&gt;", `"`, "&quot;")

// FuzzParseMarkdownV2: MarkdownV2 of any shape reads without a panic into a visible
// text no longer than the source; any text escaped as the Bot API asks reads back as
// itself with no problem; and a link written around it gives back its target exactly.
func FuzzParseMarkdownV2(f *testing.F) {
	for _, s := range markupSeeds {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		visible, hrefs, _ := parseMarkdownV2(s)
		if len(visible) > len(s) {
			t.Fatalf("parseMarkdownV2(%q): visible %q is longer than the source", s, visible)
		}
		for _, h := range hrefs {
			if len(h) > len(s) {
				t.Fatalf("parseMarkdownV2(%q): href %q is longer than the source", s, h)
			}
		}
		escaped := mdEscape(s, mdReserved+`\`)
		if visible, hrefs, err := parseMarkdownV2(escaped); visible != s || hrefs != nil || err != nil {
			t.Fatalf("parseMarkdownV2(%q) = %q, %q, %v; want the text back", escaped, visible, hrefs, err)
		}
		link := "[" + escaped + "](" + mdEscape(s, `)\`) + ")"
		if visible, hrefs, err := parseMarkdownV2(link); visible != s || !slices.Equal(hrefs, []string{s}) || err != nil {
			t.Fatalf("parseMarkdownV2(%q) = %q, %q, %v; want the text and its target back", link, visible, hrefs, err)
		}
	})
}

// mdEscape puts a backslash before every byte of s that is in chars.
func mdEscape(s, chars string) string {
	var b strings.Builder
	for i := 0; i < len(s); i++ {
		if strings.IndexByte(chars, s[i]) >= 0 {
			b.WriteByte('\\')
		}
		b.WriteByte(s[i])
	}
	return b.String()
}

// FuzzLinks: the link readers never panic on plain text, HTML or MarkdownV2 with
// domain lists in force; every link found in plain text is a piece of that text (a
// name without a scheme, in any case); and a link found is found again, still a link,
// when spaces are put around it.
func FuzzLinks(f *testing.F) {
	for _, s := range markupSeeds {
		f.Add(s)
	}
	c := Checker{cfg: policy.Verify{Links: policy.Links{AllowDomains: []string{"news.org"}, DenyDomains: []string{"evil.net"}}}}
	f.Fuzz(func(t *testing.T, text string) {
		for _, mode := range []string{"", "HTML", "MarkdownV2"} {
			c.links(context.Background(), newPayload(Input{Text: text, ParseMode: mode}))
		}
		urls, names := plainLinks(text)
		for _, u := range urls {
			if !strings.Contains(text, u) {
				t.Fatalf("link %q is not in the text %q", u, text)
			}
			i := strings.Index(text, u)
			spaced := text[:i] + " " + u + " " + text[i+len(u):]
			if again, _ := plainLinks(spaced); !slices.Contains(again, u) {
				t.Fatalf("link %q of %q is lost in %q (found %q)", u, text, spaced, again)
			}
		}
		for _, b := range names {
			if b.at < 0 || b.end > len(text) || b.at >= b.end || strings.ToLower(text[b.at:b.end]) != b.host {
				t.Fatalf("name %q at %d:%d is not in the text %q", b.host, b.at, b.end, text)
			}
			if !b.link {
				continue
			}
			spaced := text[:b.at] + " " + text[b.at:b.end] + " " + text[b.end:]
			_, again := plainLinks(spaced)
			if !slices.ContainsFunc(again, func(a bare) bool { return a.host == b.host && a.link }) {
				t.Fatalf("link %q of %q is lost in %q (found %+v)", b.host, text, spaced, again)
			}
		}
	})
}

// plainLinks is what the link check reads in a plain text: its URLs with a scheme,
// and its names without one.
func plainLinks(text string) ([]string, []bare) {
	urls, rest := newPayload(Input{Text: text}).urls()
	return urls, bareNames(rest)
}
