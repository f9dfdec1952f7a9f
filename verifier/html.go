package verifier

import (
	"fmt"
	"strconv"
	"strings"
)

// Telegram's HTML, as its Bot API documents it: these tags, a few required attributes,
// and only &lt; &gt; &amp; &quot; and numeric entities. Tags nest and close in order.
// Unknown attributes are ignored, as Telegram ignores them; a bare ">" is accepted, as
// Telegram accepts it.
var htmlTags = map[string]bool{
	"b": true, "strong": true, "i": true, "em": true, "u": true, "ins": true,
	"s": true, "strike": true, "del": true, "a": true, "code": true, "pre": true,
	"span": true, "tg-spoiler": true, "blockquote": true, "tg-emoji": true,
}

var htmlEntities = map[string]string{"lt": "<", "gt": ">", "amp": "&", "quot": `"`}

// htmlScan reads Telegram HTML into its visible text and links, keeping the first
// problem and going on past it so that the text is still whole.
type htmlScan struct {
	src       string
	text      strings.Builder
	links     []Link
	linkStart []int // for each <a> still open, its link's index and where its text starts
	open      []string
	problem   error
}

func parseHTML(s string) (visible string, hrefs []string, problem error) {
	h := scanHTML(s)
	return h.text.String(), targets(h.links), h.problem
}

func scanHTML(s string) *htmlScan {
	h := &htmlScan{src: s}
	for i := 0; i < len(s); {
		switch s[i] {
		case '<':
			i = h.tag(i)
		case '&':
			i = h.entity(i, &h.text)
		default:
			h.text.WriteByte(s[i])
			i++
		}
	}
	if len(h.open) > 0 {
		h.fail("<%s> is never closed", h.open[len(h.open)-1])
	}
	for len(h.linkStart) > 0 {
		h.endLink()
	}
	return h
}

// endLink gives the innermost open link the visible text written since it opened.
func (h *htmlScan) endLink() {
	n := len(h.linkStart)
	i, start := h.linkStart[n-2], h.linkStart[n-1]
	h.links[i].Text = h.text.String()[start:]
	h.linkStart = h.linkStart[:n-2]
}

func (h *htmlScan) fail(format string, args ...any) {
	if h.problem == nil {
		h.problem = fmt.Errorf(format, args...)
	}
}

// tag reads the tag at i and returns the offset after it.
func (h *htmlScan) tag(i int) int {
	end := strings.IndexByte(h.src[i:], '>')
	body := ""
	if end > 0 {
		body = h.src[i+1 : i+end]
	}
	closing := strings.HasPrefix(body, "/")
	name, attrs := splitTag(strings.TrimPrefix(body, "/"))
	if end < 0 || name == "" {
		h.fail(`bare "<" at character %d (write &lt;)`, charAt(h.src, i))
		h.text.WriteByte('<')
		return i + 1
	}
	switch {
	case !htmlTags[name]:
		h.fail("unknown tag <%s> at character %d", name, charAt(h.src, i))
	case closing:
		h.close(name, i)
	default:
		h.opened(name, h.attributes(attrs), i)
	}
	return i + end + 1
}

// splitTag separates a tag's lower-cased name from its attributes.
func splitTag(body string) (name, attrs string) {
	n := 0
	for n < len(body) && (isASCIILetter(body[n]) || n > 0 && (body[n] == '-' || body[n] >= '0' && body[n] <= '9')) {
		n++
	}
	return strings.ToLower(body[:n]), body[n:]
}

func isASCIILetter(c byte) bool { return c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' }

func (h *htmlScan) close(name string, i int) {
	switch {
	case len(h.open) == 0:
		h.fail("</%s> at character %d closes nothing", name, charAt(h.src, i))
	case h.open[len(h.open)-1] != name:
		h.fail("</%s> at character %d while <%s> is open", name, charAt(h.src, i), h.open[len(h.open)-1])
	default:
		h.open = h.open[:len(h.open)-1]
		if name == "a" && len(h.linkStart) > 0 {
			h.endLink()
		}
	}
}

func (h *htmlScan) opened(name string, attrs map[string]string, i int) {
	h.open = append(h.open, name)
	switch {
	case name == "a" && attrs["href"] == "":
		h.fail("<a> at character %d has no href", charAt(h.src, i))
	case name == "a":
		h.linkStart = append(h.linkStart, len(h.links), h.text.Len())
		h.links = append(h.links, Link{Target: attrs["href"]})
	case name == "span" && attrs["class"] != "tg-spoiler":
		h.fail(`<span> at character %d needs class="tg-spoiler"`, charAt(h.src, i))
	case name == "tg-emoji" && attrs["emoji-id"] == "":
		h.fail("<tg-emoji> at character %d has no emoji-id", charAt(h.src, i))
	}
}

// attributes reads name="value", name='value', name=value and bare names; values
// have their entities decoded.
func (h *htmlScan) attributes(s string) map[string]string {
	attrs := map[string]string{}
	for s = strings.TrimSpace(s); s != ""; s = strings.TrimSpace(s) {
		n := strings.IndexAny(s, "= \t\n")
		if n < 0 {
			attrs[strings.ToLower(s)] = ""
			return attrs
		}
		name := strings.ToLower(s[:n])
		s = strings.TrimLeft(s[n:], " \t\n")
		if !strings.HasPrefix(s, "=") {
			attrs[name] = ""
			continue
		}
		var raw string
		raw, s = attrValue(strings.TrimLeft(s[1:], " \t\n"))
		var v strings.Builder
		for j := 0; j < len(raw); {
			if raw[j] != '&' {
				v.WriteByte(raw[j])
				j++
				continue
			}
			j = (&htmlScan{src: raw}).entity(j, &v)
		}
		attrs[name] = v.String()
	}
	return attrs
}

func attrValue(s string) (value, rest string) {
	if s != "" && (s[0] == '"' || s[0] == '\'') {
		if end := strings.IndexByte(s[1:], s[0]); end >= 0 {
			return s[1 : end+1], s[end+2:]
		}
		return s[1:], ""
	}
	if end := strings.IndexAny(s, " \t\n"); end >= 0 {
		return s[:end], s[end:]
	}
	return s, ""
}

// entity decodes the entity at i into w and returns the offset after it.
func (h *htmlScan) entity(i int, w *strings.Builder) int {
	semi := strings.IndexByte(h.src[i:], ';')
	if semi < 2 || semi > 10 || strings.ContainsAny(h.src[i+1:i+semi], " \t\n&<") {
		h.fail(`bare "&" at character %d (write &amp;)`, charAt(h.src, i))
		w.WriteByte('&')
		return i + 1
	}
	name := h.src[i+1 : i+semi]
	if v, ok := htmlEntities[name]; ok {
		w.WriteString(v)
	} else if r, ok := numericEntity(name); ok {
		w.WriteRune(r)
	} else {
		h.fail("unknown entity &%s; at character %d (use &lt; &gt; &amp; &quot; or a number)", name, charAt(h.src, i))
		w.WriteString(h.src[i : i+semi+1])
	}
	return i + semi + 1
}

func numericEntity(name string) (rune, bool) {
	if !strings.HasPrefix(name, "#") {
		return 0, false
	}
	digits, base := name[1:], 10
	if strings.HasPrefix(digits, "x") || strings.HasPrefix(digits, "X") {
		digits, base = digits[1:], 16
	}
	n, err := strconv.ParseUint(digits, base, 32)
	if err != nil || n == 0 || n > 0x10FFFF {
		return 0, false
	}
	return rune(n), true
}
