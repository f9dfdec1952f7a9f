package standin

import (
	"errors"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"unicode/utf8"
)

// This file turns text with a parse_mode into plain text and entities,
// failing on broken markup with the messages Telegram's parser uses
// (they follow "Bad Request: can't parse entities: "). It covers the
// common markup, not every corner of Telegram's parser.

// utf16Len counts UTF-16 code units, the unit of Telegram's text limits
// and entity offsets.
func utf16Len(s string) int {
	n := 0
	for _, r := range s {
		if r >= 0x10000 {
			n += 2
		} else {
			n++
		}
	}
	return n
}

// parseText applies parse_mode to text.
func parseText(text, parseMode string) (string, []Entity, *apiError) {
	var parse func(string) (string, []Entity, error)
	switch strings.ToLower(parseMode) {
	case "":
		return text, nil, nil
	case "html":
		parse = parseHTML
	case "markdownv2":
		parse = parseMarkdownV2
	case "markdown":
		parse = parseMarkdown
	default:
		return "", nil, new(badRequest("unsupported parse_mode"))
	}
	plain, entities, err := parse(text)
	if err != nil {
		return "", nil, new(badRequest("can't parse entities: %s", err))
	}
	slices.SortStableFunc(entities, func(a, b Entity) int {
		if a.Offset != b.Offset {
			return a.Offset - b.Offset
		}
		return b.Length - a.Length
	})
	return plain, entities, nil
}

// output accumulates plain text and its UTF-16 length.
type output struct {
	b strings.Builder
	n int
}

func (o *output) write(s string) {
	o.b.WriteString(s)
	o.n += utf16Len(s)
}

// entityAt closes an entity that started at UTF-16 offset start; empty
// entities are dropped, as Telegram does.
func (o *output) entityAt(e Entity, start int, list *[]Entity) {
	if o.n > start {
		e.Offset, e.Length = start, o.n-start
		*list = append(*list, e)
	}
}

// --- HTML ---

var htmlTags = map[string]string{
	"b": "bold", "strong": "bold", "i": "italic", "em": "italic",
	"u": "underline", "ins": "underline",
	"s": "strikethrough", "strike": "strikethrough", "del": "strikethrough",
	"tg-spoiler": "spoiler", "span": "spoiler", "a": "text_link",
	"code": "code", "pre": "pre", "blockquote": "blockquote", "tg-emoji": "custom_emoji",
}

type htmlTag struct {
	name   string
	entity Entity
	start  int
}

type htmlParser struct {
	src      string
	i        int
	out      output
	stack    []htmlTag
	entities []Entity
}

func parseHTML(src string) (string, []Entity, error) {
	p := &htmlParser{src: src}
	for p.i < len(src) {
		var err error
		switch {
		case src[p.i] == '&':
			p.entityRef()
		case src[p.i] == '<' && p.i+1 < len(src) && src[p.i+1] == '/':
			err = p.endTag()
		case src[p.i] == '<':
			err = p.startTag()
		default:
			j := strings.IndexAny(src[p.i:], "<&")
			if j < 0 {
				j = len(src) - p.i
			}
			p.out.write(src[p.i : p.i+j])
			p.i += j
		}
		if err != nil {
			return "", nil, err
		}
	}
	if len(p.stack) > 0 {
		return "", nil, fmt.Errorf("Can't find end tag corresponding to start tag \"%s\"", p.stack[len(p.stack)-1].name)
	}
	return p.out.b.String(), p.entities, nil
}

// entityRef decodes &lt; &gt; &amp; &quot; and numeric references (the
// semicolon is optional); anything else stays as written.
func (p *htmlParser) entityRef() {
	s, n := decodeHTMLEntity(p.src[p.i:])
	p.out.write(s)
	p.i += n
}

func decodeHTMLEntity(s string) (string, int) {
	if strings.HasPrefix(s, "&#") {
		digits, base := s[2:], 10
		if strings.HasPrefix(digits, "x") || strings.HasPrefix(digits, "X") {
			digits, base = digits[1:], 16
		}
		n := 0
		for n < len(digits) && isDigit(digits[n], base) {
			n++
		}
		code, err := strconv.ParseInt(digits[:n], base, 32)
		if n == 0 || err != nil || code <= 0 || code > utf8.MaxRune || (code >= 0xD800 && code <= 0xDFFF) {
			return "&", 1
		}
		used := len(s) - len(digits) + n
		return string(rune(code)), used + semicolon(s[used:])
	}
	for name, value := range map[string]string{"lt": "<", "gt": ">", "amp": "&", "quot": `"`} {
		rest, ok := strings.CutPrefix(s[1:], name)
		if ok && (rest == "" || !isLetter(rest[0])) {
			return value, 1 + len(name) + semicolon(rest)
		}
	}
	return "&", 1
}

func semicolon(s string) int {
	if strings.HasPrefix(s, ";") {
		return 1
	}
	return 0
}

func isLetter(c byte) bool { return c|0x20 >= 'a' && c|0x20 <= 'z' }

func isDigit(c byte, base int) bool {
	if c >= '0' && c <= '9' {
		return true
	}
	return base == 16 && c|0x20 >= 'a' && c|0x20 <= 'f'
}

func isSpace(c byte) bool { return c == ' ' || c == '\t' || c == '\n' || c == '\r' }

func (p *htmlParser) startTag() error {
	begin := p.i
	j := begin + 1
	for j < len(p.src) && !isSpace(p.src[j]) && p.src[j] != '>' {
		j++
	}
	if j == len(p.src) {
		return fmt.Errorf("Unclosed start tag at byte offset %d", begin)
	}
	name := strings.ToLower(p.src[begin+1 : j])
	kind, ok := htmlTags[name]
	if !ok {
		return fmt.Errorf("Unsupported start tag \"%s\" at byte offset %d", name, begin)
	}
	p.i = j
	attrs, err := p.attributes(name, begin)
	if err != nil {
		return err
	}
	tag, err := newHTMLTag(name, kind, attrs, begin)
	if err != nil {
		return err
	}
	tag.start = p.out.n
	p.stack = append(p.stack, tag)
	return nil
}

func newHTMLTag(name, kind string, attrs map[string]string, begin int) (htmlTag, error) {
	tag := htmlTag{name: name, entity: Entity{Type: kind}}
	switch name {
	case "a":
		tag.entity.URL = attrs["href"]
	case "span":
		if attrs["class"] != "tg-spoiler" {
			return tag, fmt.Errorf("Tag \"span\" must have class \"tg-spoiler\" at byte offset %d", begin)
		}
	case "code":
		tag.entity.Language, _ = strings.CutPrefix(attrs["class"], "language-")
	case "tg-emoji":
		tag.entity.CustomEmojiID = attrs["emoji-id"]
	case "blockquote":
		if _, ok := attrs["expandable"]; ok {
			tag.entity.Type = "expandable_blockquote"
		}
	}
	return tag, nil
}

// attributes reads name="value" pairs up to the closing '>'.
func (p *htmlParser) attributes(tag string, begin int) (map[string]string, error) {
	attrs := map[string]string{}
	for {
		p.skipSpace()
		if p.i == len(p.src) {
			return nil, fmt.Errorf("Unclosed start tag \"%s\" at byte offset %d", tag, begin)
		}
		if p.src[p.i] == '>' {
			p.i++
			return attrs, nil
		}
		start := p.i
		for p.i < len(p.src) && !isSpace(p.src[p.i]) && p.src[p.i] != '=' && p.src[p.i] != '>' {
			p.i++
		}
		name := strings.ToLower(p.src[start:p.i])
		if name == "" {
			return nil, fmt.Errorf("Empty attribute name in the tag \"%s\" at byte offset %d", tag, begin)
		}
		p.skipSpace()
		if p.i == len(p.src) || p.src[p.i] != '=' {
			attrs[name] = ""
			continue
		}
		p.i++
		value, err := p.attributeValue(tag, begin)
		if err != nil {
			return nil, err
		}
		attrs[name] = value
	}
}

func (p *htmlParser) attributeValue(tag string, begin int) (string, error) {
	p.skipSpace()
	if p.i == len(p.src) {
		return "", fmt.Errorf("Unclosed start tag \"%s\" at byte offset %d", tag, begin)
	}
	if q := p.src[p.i]; q == '"' || q == '\'' {
		end := strings.IndexByte(p.src[p.i+1:], q)
		if end < 0 {
			return "", fmt.Errorf("Unclosed start tag at byte offset %d", begin)
		}
		raw := p.src[p.i+1 : p.i+1+end]
		p.i += end + 2
		return unescapeHTML(raw), nil
	}
	start := p.i
	for p.i < len(p.src) && !isSpace(p.src[p.i]) && p.src[p.i] != '>' {
		p.i++
	}
	if p.i == len(p.src) {
		return "", fmt.Errorf("Unexpected end of name token at byte offset %d", start)
	}
	return p.src[start:p.i], nil
}

func unescapeHTML(s string) string {
	var b strings.Builder
	for i := 0; i < len(s); {
		if s[i] != '&' {
			b.WriteByte(s[i])
			i++
			continue
		}
		v, n := decodeHTMLEntity(s[i:])
		b.WriteString(v)
		i += n
	}
	return b.String()
}

func (p *htmlParser) skipSpace() {
	for p.i < len(p.src) && isSpace(p.src[p.i]) {
		p.i++
	}
}

func (p *htmlParser) endTag() error {
	begin := p.i
	if len(p.stack) == 0 {
		return fmt.Errorf("Unexpected end tag at byte offset %d", begin)
	}
	p.i += 2
	start := p.i
	for p.i < len(p.src) && !isSpace(p.src[p.i]) && p.src[p.i] != '>' {
		p.i++
	}
	name := strings.ToLower(p.src[start:p.i])
	p.skipSpace()
	if p.i == len(p.src) || p.src[p.i] != '>' {
		return fmt.Errorf("Unclosed end tag at byte offset %d", begin)
	}
	p.i++
	open := p.stack[len(p.stack)-1]
	if name != "" && name != open.name {
		return fmt.Errorf("Unmatched end tag at byte offset %d, expected \"</%s>\", found \"</%s>\"", begin, open.name, name)
	}
	p.stack = p.stack[:len(p.stack)-1]
	p.closeEntity(open)
	return nil
}

// closeEntity emits the entity of a closed tag. A <code class="language-x">
// inside <pre> gives the pre its language instead of a code entity.
func (p *htmlParser) closeEntity(tag htmlTag) {
	e := tag.entity
	if e.Type == "code" && e.Language != "" && len(p.stack) > 0 && p.stack[len(p.stack)-1].name == "pre" {
		p.stack[len(p.stack)-1].entity.Language = e.Language
		return
	}
	if tag.name != "pre" {
		e.Language = ""
	}
	if e.Type == "text_link" && e.URL == "" {
		return
	}
	p.out.entityAt(e, tag.start, &p.entities)
}

// --- MarkdownV2 ---

// mdReserved must be escaped with '\' wherever they do not start or end
// an entity.
const mdReserved = "_*[]()~`>#+-=|{}.!"

type mdOpen struct {
	kind      string // Bold, Italic, ... as named in error messages
	begin     int    // byte offset of the opening marker
	start     int    // UTF-16 offset of the content
	startByte int    // byte offset of the content in the output
	lang      string
}

type mdParser struct {
	src      string
	i        int
	out      output
	stack    []mdOpen
	entities []Entity
	quote    int // UTF-16 start of the open block quote, -1 when none
}

var mdTypes = map[string]string{
	"Bold": "bold", "Italic": "italic", "Underline": "underline", "Strikethrough": "strikethrough",
	"Spoiler": "spoiler", "Code": "code", "Pre": "pre", "PreCode": "pre",
	"TextUrl": "text_link", "CustomEmoji": "custom_emoji",
}

func parseMarkdownV2(src string) (string, []Entity, error) {
	p := &mdParser{src: src, quote: -1}
	for p.i < len(src) {
		if err := p.step(); err != nil {
			return "", nil, err
		}
	}
	if len(p.stack) > 0 {
		top := p.stack[len(p.stack)-1]
		return "", nil, fmt.Errorf("Can't find end of %s entity at byte offset %d", top.kind, top.begin)
	}
	p.closeQuote()
	return p.out.b.String(), p.entities, nil
}

func (p *mdParser) top() *mdOpen {
	if len(p.stack) == 0 {
		return nil
	}
	return &p.stack[len(p.stack)-1]
}

func (p *mdParser) at(k int) byte {
	if p.i+k < len(p.src) {
		return p.src[p.i+k]
	}
	return 0
}

// step consumes one character or marker.
func (p *mdParser) step() error {
	c := p.src[p.i]
	if c == '\\' && p.at(1) > 0 && p.at(1) <= 126 {
		p.out.write(p.src[p.i+1 : p.i+2])
		p.i += 2
		return nil
	}
	top := p.top()
	inCode := top != nil && (top.kind == "Code" || top.kind == "Pre" || top.kind == "PreCode")
	if top != nil && p.isEnd(top.kind) {
		return p.closeTop()
	}
	if inCode {
		p.literal()
		return nil
	}
	if c == '\n' {
		p.newline()
		return nil
	}
	if c == '>' && (p.i == 0 || p.src[p.i-1] == '\n' || p.src[p.i-1] == '\r') {
		if p.quote < 0 {
			p.quote = p.out.n
		}
		p.i++
		return nil
	}
	if opened := p.open(); opened {
		return nil
	}
	if strings.IndexByte(mdReserved, c) >= 0 {
		return fmt.Errorf("Character '%c' is reserved and must be escaped with the preceding '\\'", c)
	}
	p.literal()
	return nil
}

// literal copies one UTF-8 character.
func (p *mdParser) literal() {
	_, size := utf8.DecodeRuneInString(p.src[p.i:])
	p.out.write(p.src[p.i : p.i+size])
	p.i += size
}

// newline ends a block quote whose next line does not start with '>'.
func (p *mdParser) newline() {
	p.out.write("\n")
	p.i++
	if p.quote >= 0 && p.at(0) != '>' {
		p.closeQuote()
	}
}

func (p *mdParser) closeQuote() {
	if p.quote >= 0 {
		p.out.entityAt(Entity{Type: "blockquote"}, p.quote, &p.entities)
		p.quote = -1
	}
}

func (p *mdParser) isEnd(kind string) bool {
	c, next := p.at(0), p.at(1)
	switch kind {
	case "Bold":
		return c == '*'
	case "Italic":
		return c == '_' && next != '_'
	case "Underline":
		return c == '_' && next == '_'
	case "Strikethrough":
		return c == '~'
	case "Spoiler":
		return c == '|' && next == '|'
	case "Code":
		return c == '`'
	case "Pre", "PreCode":
		return strings.HasPrefix(p.src[p.i:], "```")
	}
	return c == ']' // TextUrl, CustomEmoji
}

// markers are the entity openers, longest first.
var markers = []struct{ marker, kind string }{
	{"```", "Pre"}, {"__", "Underline"}, {"||", "Spoiler"}, {"![", "CustomEmoji"},
	{"*", "Bold"}, {"_", "Italic"}, {"~", "Strikethrough"}, {"`", "Code"}, {"[", "TextUrl"},
}

// open starts an entity if a marker is at the cursor.
func (p *mdParser) open() bool {
	for _, m := range markers {
		if !strings.HasPrefix(p.src[p.i:], m.marker) {
			continue
		}
		o := mdOpen{kind: m.kind, begin: p.i}
		p.i += len(m.marker)
		if m.kind == "Pre" {
			o.lang = p.preLanguage()
			if o.lang != "" {
				o.kind = "PreCode"
			}
		}
		o.start, o.startByte = p.out.n, p.out.b.Len()
		p.stack = append(p.stack, o)
		return true
	}
	return false
}

// preLanguage reads the language after ``` up to the end of the line.
func (p *mdParser) preLanguage() string {
	j := p.i
	for j < len(p.src) && !isSpace(p.src[j]) && p.src[j] != '`' {
		j++
	}
	if j == p.i || j == len(p.src) {
		return ""
	}
	lang := p.src[p.i:j]
	p.i = j
	if p.src[p.i] == '\n' {
		p.i++
	}
	return lang
}

func (p *mdParser) closeTop() error {
	o := p.stack[len(p.stack)-1]
	p.stack = p.stack[:len(p.stack)-1]
	e := Entity{Type: mdTypes[o.kind], Language: o.lang}
	switch o.kind {
	case "Pre", "PreCode":
		p.i += 3
	case "Underline", "Spoiler":
		p.i += 2
	case "TextUrl", "CustomEmoji":
		p.i++
		url, err := p.linkURL(o)
		if err != nil {
			return err
		}
		if o.kind == "CustomEmoji" {
			_, e.CustomEmojiID, _ = strings.Cut(url, "id=")
		} else if e.URL = url; url == "" {
			return nil
		}
	default:
		p.i++
	}
	p.out.entityAt(e, o.start, &p.entities)
	return nil
}

// linkURL reads "(url)" after a link's ']'; without it the link text is
// the URL.
func (p *mdParser) linkURL(o mdOpen) (string, error) {
	if p.at(0) != '(' {
		return p.out.b.String()[o.startByte:], nil
	}
	p.i++
	open := p.i
	var url strings.Builder
	for p.i < len(p.src) && p.src[p.i] != ')' {
		if p.src[p.i] == '\\' && p.i+1 < len(p.src) {
			p.i++
		}
		url.WriteByte(p.src[p.i])
		p.i++
	}
	if p.i == len(p.src) {
		return "", fmt.Errorf("Can't find end of a URL at byte offset %d", open)
	}
	p.i++
	return url.String(), nil
}

// --- Markdown (legacy) ---

var errNoEnd = errors.New("no end")

// legacyTypes maps the legacy Markdown markers to entity types.
var legacyTypes = map[byte]string{'*': "bold", '_': "italic", '`': "code", '[': "text_link"}

func parseMarkdown(src string) (string, []Entity, error) {
	var out output
	var entities []Entity
	for i := 0; i < len(src); {
		c := src[i]
		if c == '\\' && i+1 < len(src) && strings.IndexByte("_*`[", src[i+1]) >= 0 {
			out.write(src[i+1 : i+2])
			i += 2
			continue
		}
		if strings.IndexByte("_*`[", c) < 0 {
			_, size := utf8.DecodeRuneInString(src[i:])
			out.write(src[i : i+size])
			i += size
			continue
		}
		next, err := legacyEntity(src, i, &out, &entities)
		if err != nil {
			return "", nil, fmt.Errorf("Can't find end of the entity starting at byte offset %d", i)
		}
		i = next
	}
	return out.b.String(), entities, nil
}

// legacyEntity parses one *bold*, _italic_, `code`, ```pre``` or
// [text](url) starting at i and returns the index after it.
func legacyEntity(src string, i int, out *output, entities *[]Entity) (int, error) {
	marker, kind := src[i:i+1], legacyTypes[src[i]]
	endMarker := marker
	switch {
	case strings.HasPrefix(src[i:], "```"):
		marker, endMarker, kind = "```", "```", "pre"
	case marker == "[":
		endMarker = "]"
	}
	body := src[i+len(marker):]
	end := strings.Index(body, endMarker)
	if end < 0 {
		return 0, errNoEnd
	}
	start := out.n
	out.write(body[:end])
	next := i + len(marker) + end + len(endMarker)
	e := Entity{Type: kind}
	if kind == "text_link" {
		rest := src[next:]
		if !strings.HasPrefix(rest, "(") || !strings.Contains(rest, ")") {
			return 0, errNoEnd
		}
		e.URL = rest[1:strings.IndexByte(rest, ')')]
		next += len(e.URL) + 2
	}
	out.entityAt(e, start, entities)
	return next, nil
}
