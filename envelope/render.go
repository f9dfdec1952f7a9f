package envelope

import (
	"bytes"
	"fmt"
	"reflect"
	"strconv"
	"strings"
	"time"
	"unicode"
	"unicode/utf8"

	"gopkg.in/yaml.v3"
)

// Body line labels. Parse reads back the two that carry facts not in the front matter.
const (
	labelCreated  = "- Request created: "
	labelResponse = "- Service response: "
	labelRetry    = "- Retry without verification: "
	labelVerify   = "- Verify: "
	labelResolved = "- Resolved: "
	labelExcerpt  = "- Excerpt: "
)

// Render returns the note: YAML front matter (indent 2, times in UTC, target always
// quoted, multi-line strings on one double-quoted line so that no "---" line can end
// the front matter early), a blank line, then the body. It returns an error wrapping
// ErrInvalid when Validate fails.
func (e Envelope) Render() ([]byte, error) {
	if err := e.Validate(); err != nil {
		return nil, fmt.Errorf("envelope: render: %w", err)
	}
	var buf bytes.Buffer
	buf.WriteString("---\n")
	if err := e.writeFrontMatter(&buf); err != nil {
		return nil, fmt.Errorf("envelope: render %s: %w", e.OperationID, err)
	}
	buf.WriteString("---\n\n")
	e.writeBody(&buf)
	return buf.Bytes(), nil
}

func (e Envelope) writeFrontMatter(buf *bytes.Buffer) error {
	e.Created, e.Expires = e.Created.UTC(), e.Expires.UTC()
	if e.ResolvedAt != nil {
		at := e.ResolvedAt.UTC()
		e.ResolvedAt = &at
	}
	// The node is encoded from the envelope's shape: Node.Encode writes YAML and
	// parses it back, and some strings yaml.v3 writes (a tab before a line break)
	// it cannot parse. styleScalars puts the real strings in afterwards.
	var doc yaml.Node
	if err := doc.Encode(e.shape()); err != nil {
		return err
	}
	styleScalars(&doc, e.frontStrings())
	enc := yaml.NewEncoder(buf)
	enc.SetIndent(2)
	if err := enc.Encode(&doc); err != nil {
		return err
	}
	return enc.Close()
}

// styleScalars forces double quotes on the target and on every string that a plain,
// single-quoted or block style could spread over several lines: in double quotes
// yaml.v3 escapes line breaks and control characters and keeps the value on one line.
// Each string's value is set again from strs, the envelope's own: yaml.v3 hands back
// a string that starts with a line break without it ("\n" becomes "").
func styleScalars(m *yaml.Node, strs map[string]string) {
	for i := 0; i+1 < len(m.Content); i += 2 {
		k, v := m.Content[i], m.Content[i+1]
		if v.Kind != yaml.ScalarNode || v.ShortTag() != "!!str" {
			continue
		}
		if s, ok := strs[k.Value]; ok {
			v.Value = s
		}
		if k.Value == "target" || !singleLine(v.Value) {
			v.Style = yaml.DoubleQuotedStyle
		}
	}
}

// shape is e with every non-empty UTF-8 string field replaced by a plain word:
// the same keys in the same order, and no string for the encoder to trip on. A
// string that is not UTF-8 stays: yaml.v3 writes it as !!binary, in base64.
func (e Envelope) shape() Envelope {
	v := reflect.ValueOf(&e).Elem()
	for _, f := range reflect.VisibleFields(v.Type()) {
		if fv := v.FieldByIndex(f.Index); f.Type.Kind() == reflect.String && fv.String() != "" && utf8.ValidString(fv.String()) {
			fv.SetString("x")
		}
	}
	return e
}

// frontStrings maps the front matter key of each string field to its value.
func (e Envelope) frontStrings() map[string]string {
	strs := map[string]string{}
	v := reflect.ValueOf(e)
	for _, f := range reflect.VisibleFields(v.Type()) {
		key, _, _ := strings.Cut(f.Tag.Get("yaml"), ",")
		if key != "" && key != "-" && f.Type.Kind() == reflect.String {
			strs[key] = v.FieldByIndex(f.Index).String()
		}
	}
	return strs
}

// singleLine reports whether s is valid UTF-8 free of control characters, line and
// paragraph separators and byte order marks.
func singleLine(s string) bool {
	if !utf8.ValidString(s) {
		return false
	}
	for _, r := range s {
		if unicode.IsControl(r) || r == '\u2028' || r == '\u2029' || r == '\ufeff' {
			return false
		}
	}
	return true
}

func (e Envelope) writeBody(buf *bytes.Buffer) {
	line := func(label, value string) {
		buf.WriteString(label)
		buf.WriteString(value)
		buf.WriteByte('\n')
	}
	line(labelCreated, e.created())
	line(labelResponse, inline(e.Response))
	line(labelRetry, e.retry())
	if e.Unresolved() {
		line(labelVerify, e.verify())
	} else {
		line(labelResolved, e.resolved())
	}
	line(labelExcerpt, strconv.Quote(e.Excerpt))
}

func (e Envelope) created() string {
	if e.Attempts > 1 {
		return fmt.Sprintf("yes (%d attempts)", e.Attempts)
	}
	return "yes"
}

func (e Envelope) retry() string {
	switch e.Status {
	case StatusCommitted:
		return "not needed (delivered)"
	case StatusNotCommitted:
		return "allowed"
	}
	return "forbidden"
}

// verify says what a person checks: a message or a post in its chat, each
// item of several, or, for any other action (an edit, a pin, an HTTP call),
// whether it took effect at its target, with where to read exactly what it
// does.
func (e Envelope) verify() string {
	resolve := fmt.Sprintf("then `/resolve %s delivered|not_delivered`", e.OperationID)
	switch {
	case len(e.Items) > 0:
		return fmt.Sprintf("look in chat %s for each of the %d items listed above; %s", inline(e.Target), len(e.Items), resolve)
	case e.Action == ActionPublishPost:
		return fmt.Sprintf("look for the post in chat %s; %s", inline(e.Target), resolve)
	case e.Action == ActionSendMessage || e.Action == "":
		return fmt.Sprintf("look for the message in chat %s; %s", inline(e.Target), resolve)
	}
	return fmt.Sprintf("check at %s whether its %s took effect (`countersign ops show %s` says exactly what it does); %s",
		inline(e.Target), inline(e.Action), e.OperationID, resolve)
}

func (e Envelope) resolved() string {
	what := e.Resolution
	if what == "" {
		what = string(e.Status)
	}
	s := inline(what)
	if e.ResolvedBy != "" {
		s += " by " + inline(e.ResolvedBy)
	}
	if e.ResolvedAt != nil {
		s += " at " + e.ResolvedAt.UTC().Format(time.RFC3339Nano)
	}
	return s
}

// inline writes s as is when Parse can read it back from a body line unchanged, and as
// a Go-quoted string otherwise (empty, surrounding space, a leading quote, line breaks
// or other control characters, invalid UTF-8).
func inline(s string) string {
	if s == "" || s != strings.TrimSpace(s) || s[0] == '"' || !singleLine(s) {
		return strconv.Quote(s)
	}
	return s
}

// uninline is the inverse of inline; a value that is not a valid quoted string is
// taken as written.
func uninline(s string) string {
	if strings.HasPrefix(s, `"`) {
		if u, err := strconv.Unquote(s); err == nil {
			return u
		}
	}
	return s
}
