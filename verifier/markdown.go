package verifier

import (
	"fmt"
	"slices"
	"strings"
	"unicode/utf8"
)

// An approximation of Telegram's MarkdownV2, good enough to catch what the Bot API
// would reject: a backslash escapes the next character; *bold*, _italic_, __underline__,
// ~strikethrough~ and ||spoiler|| open and close in order; `code` and ```pre``` take
// their content literally; [text](url) and ![emoji](tg://emoji?id=...) are links; ">"
// starts a quote at the start of a line, "**>" an expandable one. Outside of these,
// every reserved character must be escaped. Expandable quotes' closing "||" and the
// greedy reading of "___" are not modelled: they read as spoiler and underline marks.
const mdReserved = "_*[]()~`>#+-=|{}.!"

// mdScan reads MarkdownV2 into its visible text and link targets, keeping the first
// problem and going on past it.
type mdScan struct {
	src       string
	text      strings.Builder
	links     []Link
	linkStart []int    // where the text of each "[" still open starts, innermost last
	open      []string // marks not yet closed, innermost last
	problem   error
}

func parseMarkdownV2(s string) (visible string, hrefs []string, problem error) {
	m := scanMarkdownV2(s)
	return m.text.String(), targets(m.links), m.problem
}

func scanMarkdownV2(s string) *mdScan {
	m := &mdScan{src: s}
	for i := 0; i < len(s); {
		i = m.step(i)
	}
	if len(m.open) > 0 {
		m.fail("%q is never closed", m.open[len(m.open)-1])
	}
	return m
}

func (m *mdScan) fail(format string, args ...any) {
	if m.problem == nil {
		m.problem = fmt.Errorf(format, args...)
	}
}

// step reads what starts at i and returns the offset after it.
func (m *mdScan) step(i int) int {
	s := m.src
	lineStart := i == 0 || s[i-1] == '\n'
	switch {
	case s[i] == '\\':
		return m.escaped(i)
	case strings.HasPrefix(s[i:], "```"):
		return m.literal(i, "```")
	case s[i] == '`':
		return m.literal(i, "`")
	case lineStart && strings.HasPrefix(s[i:], "**>"):
		return i + 3
	case lineStart && s[i] == '>':
		return i + 1
	case strings.HasPrefix(s[i:], "__"), strings.HasPrefix(s[i:], "||"):
		return m.toggle(s[i:i+2], i)
	case s[i] == '_' || s[i] == '*' || s[i] == '~':
		return m.toggle(s[i:i+1], i)
	case strings.HasPrefix(s[i:], "!["):
		return m.toggle("[", i+1)
	case s[i] == '[':
		return m.toggle("[", i)
	case s[i] == ']' && slices.Contains(m.open, "["):
		return m.linkEnd(i)
	case strings.IndexByte(mdReserved, s[i]) >= 0:
		m.fail(`unescaped %q at character %d (write \%c)`, s[i:i+1], charAt(s, i), s[i])
	}
	_, size := utf8.DecodeRuneInString(s[i:])
	m.text.WriteString(s[i : i+size])
	return i + size
}

func (m *mdScan) escaped(i int) int {
	if i+1 >= len(m.src) {
		m.fail(`a "\" at the end escapes nothing (write \\)`)
		return i + 1
	}
	_, size := utf8.DecodeRuneInString(m.src[i+1:])
	m.text.WriteString(m.src[i+1 : i+1+size])
	return i + 1 + size
}

// literal reads code or pre from i to its closing fence, where only "\" escapes.
func (m *mdScan) literal(i int, fence string) int {
	j := i + len(fence)
	for j < len(m.src) {
		switch {
		case m.src[j] == '\\' && j+1 < len(m.src):
			m.text.WriteByte(m.src[j+1])
			j += 2
		case strings.HasPrefix(m.src[j:], fence):
			return j + len(fence)
		default:
			m.text.WriteByte(m.src[j])
			j++
		}
	}
	m.fail("%q at character %d is never closed", fence, charAt(m.src, i))
	return j
}

// toggle opens mark at i, or closes it when it is the innermost open mark.
func (m *mdScan) toggle(mark string, i int) int {
	switch n := len(m.open); {
	case mark != "[" && n > 0 && m.open[n-1] == mark:
		m.open = m.open[:n-1]
	case mark != "[" && slices.Contains(m.open, mark):
		m.fail("%q at character %d closes across %q", mark, charAt(m.src, i), m.open[n-1])
	default:
		m.open = append(m.open, mark)
		if mark == "[" {
			m.linkStart = append(m.linkStart, m.text.Len())
		}
	}
	return i + len(mark)
}

// linkEnd reads "](url)" at i, closing the link's text.
func (m *mdScan) linkEnd(i int) int {
	k := len(m.open) - 1
	if m.open[k] != "[" {
		m.fail(`"]" at character %d closes across %q`, charAt(m.src, i), m.open[k])
	}
	for m.open[k] != "[" {
		k--
	}
	m.open = slices.Delete(m.open, k, k+1)
	start := m.linkStart[len(m.linkStart)-1]
	m.linkStart = m.linkStart[:len(m.linkStart)-1]
	if !strings.HasPrefix(m.src[i+1:], "(") {
		m.fail(`link text at character %d has no "(url)" after it`, charAt(m.src, i))
		return i + 1
	}
	var url strings.Builder
	for j := i + 2; j < len(m.src); j++ {
		switch m.src[j] {
		case '\\':
			if j+1 < len(m.src) {
				j++
				url.WriteByte(m.src[j])
			}
		case ')':
			m.links = append(m.links, Link{Text: m.text.String()[start:], Target: url.String()})
			return j + 1
		default:
			url.WriteByte(m.src[j])
		}
	}
	m.fail(`link at character %d has no closing ")"`, charAt(m.src, i))
	return len(m.src)
}
