package tools

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"sort"
	"strconv"
	"strings"

	"github.com/countersign/countersign/secret"
)

// Fingerprint identifies a call of t by its arguments as t reads them (see
// canonical): whatever the key order or spacing of the JSON, a null or a key t does
// not take, however chat_id spells its chat (a number, "+222", "@News_Desk"), the
// same call has the same fingerprint, so the loop guard sees it issued twice.
func Fingerprint(t Tool, args json.RawMessage) string {
	canon := []byte(args)
	if m, ok := canonical(t, args); ok {
		canon, _ = json.Marshal(m) // maps marshal with sorted keys
	} else if compact := new(bytes.Buffer); json.Compact(compact, args) == nil {
		canon = compact.Bytes()
	}
	sum := sha256.Sum256(append([]byte(t.Name()+"\x00"), canon...))
	return hex.EncodeToString(sum[:])
}

// Brief is a call of t in a few words, for a person reading why it stopped:
// `commit_send_message(chat_id: "222", text: "Hello…")`. Long strings are cut, and
// a value that looks like a secret is withheld.
func Brief(t Tool, args json.RawMessage) string {
	m, ok := canonical(t, args)
	if !ok {
		return t.Name() + "(arguments that are not a JSON object)"
	}
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	parts := make([]string, len(keys))
	for i, k := range keys {
		parts[i] = k + ": " + briefValue(m[k])
	}
	return t.Name() + "(" + strings.Join(parts, ", ") + ")"
}

func briefValue(v any) string {
	const width = 40
	s, isString := v.(string)
	if !isString {
		b, _ := json.Marshal(v)
		s = string(b)
	}
	switch {
	case secret.Contains(s):
		return "(withheld: it looks like a secret)"
	case isString:
		return strconv.Quote(excerpt(s, width))
	}
	return excerpt(s, width)
}
