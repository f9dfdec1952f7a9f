package envelope

import (
	"bytes"
	"unicode/utf8"
)

// Peek returns the text a note's front matter plainly gives key, at a fraction of the
// cost of Parse, so that a scan can pass over notes it does not want without parsing
// them. ok is true only when:
//
//   - the note opens and closes its front matter the way Parse reads it;
//   - every front matter line is blank, a "#" comment, or a one-line top-level
//     "key: value" entry whose value is a plain, single-quoted or double-quoted scalar
//     that ends on that line (so no entry can hide or change another);
//   - key occurs exactly once, and its value is not null and is either plain or quoted
//     without escapes.
//
// When ok is true and Parse accepts the same note, the field Parse fills from key was
// decoded from exactly this text (for a string field, it is this text). Parse may still
// reject the note for another reason.
func Peek(data []byte, key string) (value string, ok bool) {
	fm, ok := frontMatterLines(data)
	if !ok {
		return "", false
	}
	var text []byte
	found, simple := 0, false
	for len(fm) > 0 {
		var line []byte
		line, fm, _ = bytes.Cut(fm, []byte("\n"))
		k, v, isSimple, isEntry := entry(line)
		if !isEntry {
			return "", false
		}
		if string(k) == key {
			found++
			text, simple = v, isSimple
		}
	}
	if found != 1 || !simple {
		return "", false
	}
	return string(text), true
}

// frontMatterLines returns the text between the fences, found as the frontmatter
// library finds them: the first non-blank line is "---", and the next line that trims
// to "---" closes.
func frontMatterLines(data []byte) ([]byte, bool) {
	opened := false
	start := 0
	for pos := 0; pos < len(data); {
		end := bytes.IndexByte(data[pos:], '\n')
		if end < 0 {
			end = len(data) - pos
		}
		line := bytes.TrimSpace(data[pos : pos+end])
		next := pos + end + 1
		switch {
		case !opened && len(line) == 0:
		case !opened && string(line) == "---":
			opened, start = true, next
		case !opened:
			return nil, false
		case string(line) == "---":
			return data[start:pos], true
		}
		pos = next
	}
	return nil, false
}

// entry reads one front matter line. ok is false when the line is not blank, a
// comment, or a one-line top-level entry; simple is false when the value's text is not
// what a decoder would take from it (null, or quoted with escapes).
func entry(line []byte) (key, value []byte, simple, ok bool) {
	line = bytes.TrimSuffix(line, []byte("\r"))
	if !plainText(line) {
		return nil, nil, false, false
	}
	trimmed := bytes.TrimLeft(line, " ")
	if len(trimmed) == 0 || trimmed[0] == '#' {
		return nil, nil, false, true
	}
	i := 0
	for i < len(line) && (isAlnum(line[i]) || line[i] == '_') {
		i++
	}
	if i == 0 || i == len(line) || line[i] != ':' {
		return nil, nil, false, false
	}
	key, rest := line[:i], line[i+1:]
	if len(rest) > 0 && rest[0] != ' ' {
		return nil, nil, false, false
	}
	value, simple, ok = scalar(bytes.Trim(rest, " "))
	return key, value, simple, ok
}

// plainText rejects anything YAML could read as a line break or an indentation
// trap: control characters (tab included), NEL, LS, PS, BOM, invalid UTF-8.
func plainText(b []byte) bool {
	if !utf8.Valid(b) {
		return false
	}
	for _, r := range string(b) {
		if r < ' ' || r == 0x7f || r == 0x85 || r == '\u2028' || r == '\u2029' || r == '\ufeff' {
			return false
		}
	}
	return true
}

// scalar reads a one-line value (trimmed of spaces).
func scalar(v []byte) (text []byte, simple, ok bool) {
	if len(v) == 0 {
		return nil, false, true // null
	}
	switch v[0] {
	case '"':
		return doubleQuoted(v)
	case '\'':
		return singleQuoted(v)
	}
	if bytes.ContainsAny(v[:1], "-?:,[]{}#&*!|>%@`") && !(v[0] == '-' && len(v) > 1 && v[1] != ' ') {
		return nil, false, false
	}
	if i := bytes.Index(v, []byte(" #")); i >= 0 {
		v = bytes.TrimRight(v[:i], " ")
	}
	switch string(v) {
	case "~", "null", "Null", "NULL":
		return nil, false, true
	}
	return v, true, true
}

func doubleQuoted(v []byte) ([]byte, bool, bool) {
	escaped := false
	for i := 1; i < len(v); i++ {
		switch v[i] {
		case '\\':
			escaped = true
			i++
		case '"':
			return v[1:i], !escaped, afterScalar(v[i+1:])
		}
	}
	return nil, false, false
}

func singleQuoted(v []byte) ([]byte, bool, bool) {
	for i := 1; i < len(v); i++ {
		if v[i] != '\'' {
			continue
		}
		if i+1 < len(v) && v[i+1] == '\'' {
			i++
			continue
		}
		return bytes.ReplaceAll(v[1:i], []byte("''"), []byte("'")), true, afterScalar(v[i+1:])
	}
	return nil, false, false
}

// afterScalar accepts what may follow a quoted scalar on its line: nothing, or spaces
// and possibly a comment.
func afterScalar(rest []byte) bool {
	if len(rest) == 0 {
		return true
	}
	trimmed := bytes.TrimLeft(rest, " ")
	return rest[0] == ' ' && (len(trimmed) == 0 || trimmed[0] == '#')
}

func isAlnum(c byte) bool {
	return c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9'
}
