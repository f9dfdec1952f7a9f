package tools

import (
	"bytes"
	"encoding/json"
	"fmt"
	"regexp"
	"slices"

	"github.com/countersign/countersign/policy"
)

// args is a call's argument object, key by key, read as models write it: a key
// the tool does not take is ignored, and null is the same as leaving the key out.
// Each field is then read on its own, so that a refusal names the field and says
// what it wants.
type args struct {
	tool   string
	fields map[string]json.RawMessage
}

// readArgs reads raw as a JSON object; shape shows the caller what one looks like.
func readArgs(tool string, raw json.RawMessage, shape string) (args, error) {
	a := args{tool: tool}
	dec := json.NewDecoder(bytes.NewReader(raw))
	if err := dec.Decode(&a.fields); err != nil || a.fields == nil || dec.More() {
		return a, a.refuse("arguments must be a JSON object like %s, got %s", shape, kindOfRaw(raw))
	}
	return a, nil
}

func (a args) refuse(format string, v ...any) error {
	return &ArgsError{Tool: a.tool, Reason: fmt.Sprintf(format, v...)}
}

// value returns the field's JSON, or nil when it is missing or null.
func (a args) value(key string) json.RawMessage {
	v := bytes.TrimSpace(a.fields[key])
	if len(v) == 0 || string(v) == "null" {
		return nil
	}
	return v
}

// string reads a string field; a missing one is "" unless it is required.
func (a args) string(key string, required bool) (string, error) {
	v := a.value(key)
	if v == nil {
		if required {
			return "", a.refuse("%s is missing: want a string", key)
		}
		return "", nil
	}
	var s string
	if err := json.Unmarshal(v, &s); err != nil {
		return "", a.refuse("%s: want a string, got %s", key, kindOf(v))
	}
	return s, nil
}

// bool reads a boolean field; a missing one is false.
func (a args) bool(key string) (bool, error) {
	v := a.value(key)
	if v == nil {
		return false, nil
	}
	var b bool
	if err := json.Unmarshal(v, &b); err != nil {
		return false, a.refuse("%s: want true or false, got %s", key, kindOf(v))
	}
	return b, nil
}

// messageID reads a message id: a positive whole number (or a string of one, as
// models sometimes write it); 0 when it is missing.
func (a args) messageID(key string) (int64, error) {
	v := a.value(key)
	if v == nil {
		return 0, nil
	}
	if v[0] == '"' {
		var s string
		if json.Unmarshal(v, &s) == nil {
			v = json.RawMessage(s)
		}
	}
	var id int64
	if !wholeNumber.Match(v) || json.Unmarshal(v, &id) != nil || id <= 0 {
		return 0, a.refuse("%s: want a message id, a positive whole number, got %s", key, kindOf(a.value(key)))
	}
	return id, nil
}

// wholeNumber is a JSON number written as an integer: no fraction, no exponent.
var wholeNumber = regexp.MustCompile(`^-?[0-9]+$`)

// chatID reads chat_id as Telegram's API takes it, "Integer or String": 222,
// "222", "-1001234567890" or "@username". The chat it names is checked later.
func (a args) chatID() (string, error) {
	const want = `want a chat id (222, -1001234567890 or "222") or an "@username"`
	v := a.value("chat_id")
	switch {
	case v == nil:
		return "", a.refuse("chat_id is missing: %s", want)
	case v[0] == '"':
		var s string
		if err := json.Unmarshal(v, &s); err != nil {
			return "", a.refuse("chat_id: %s, got %s", want, kindOf(v))
		}
		return s, nil
	case wholeNumber.Match(v):
		return string(v), nil
	case kindOf(v) == "a number":
		return "", a.refuse("chat_id %s is not a whole number: %s", v, want)
	}
	return "", a.refuse("chat_id: %s, got %s", want, kindOf(v))
}

// kindOf names what a JSON value is, for a refusal: `a number (5)`, `a list`.
func kindOf(v json.RawMessage) string {
	switch v = bytes.TrimSpace(v); {
	case len(v) == 0:
		return "nothing"
	case v[0] == '"':
		return "a string"
	case v[0] == '{':
		return "an object"
	case v[0] == '[':
		return "a list"
	case string(v) == "true" || string(v) == "false":
		return "a boolean (" + string(v) + ")"
	case string(v) == "null":
		return "null"
	}
	var n json.Number
	if json.Unmarshal(v, &n) == nil {
		return "a number"
	}
	return "something that is not JSON"
}

// kindOfRaw names a whole argument text that is not an object. It never quotes
// the text, which may hold anything.
func kindOfRaw(raw json.RawMessage) string {
	if len(bytes.TrimSpace(raw)) > 0 && !json.Valid(raw) {
		return "text that is not JSON"
	}
	return kindOf(raw)
}

// canonical is a call's arguments as t reads them, for telling one call from
// another: only the keys t takes, none that is null (or an empty optional string,
// which reads as left out), and chat_id in the one form policy.NormalizeTarget gives
// a chat, written as a string even when the caller sent a number. Values are left
// as sent otherwise, so arguments t refuses still have a canonical form. ok is false
// when args is not a JSON object.
func canonical(t Tool, args json.RawMessage) (map[string]any, bool) {
	var in map[string]any
	dec := json.NewDecoder(bytes.NewReader(args))
	dec.UseNumber()
	if err := dec.Decode(&in); err != nil || in == nil || dec.More() {
		return nil, false
	}
	p := t.Params()
	out := map[string]any{}
	for k := range p.Properties {
		v, ok := in[k]
		if !ok || v == nil || v == "" && !slices.Contains(p.Required, k) {
			continue
		}
		if k == "chat_id" {
			v = canonicalChat(v)
		}
		out[k] = v
	}
	return out, true
}

func canonicalChat(v any) any {
	var s string
	switch c := v.(type) {
	case string:
		s = c
	case json.Number:
		if !wholeNumber.MatchString(c.String()) {
			return v
		}
		s = c.String()
	default:
		return v
	}
	if t, err := policy.NormalizeTarget(s); err == nil {
		return t
	}
	return v
}

// excerpt is s cut to at most n characters, marked when cut.
func excerpt(s string, n int) string {
	if r := []rune(s); len(r) > n {
		return string(r[:n]) + "…"
	}
	return s
}
