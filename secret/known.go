package secret

import (
	"encoding/json"
	"net/url"
	"sort"
	"strconv"
	"strings"
)

// minKnown is the shortest spelling of a known secret that is withheld: a
// shorter one would blank out ordinary words, and no credential is that short.
const minKnown = 8

// Known withholds one secret the program holds, such as the bot's own token, in
// every spelling text gives it: as it came (with a CR from a CRLF .env file, a
// space, or the quotes around it), trimmed, escaped for a URL path or query,
// quoted as Go, JSON and a quoted log value quote it, and its secret half (after
// the first ':') alone. An error quotes a request's URL, and a log line quotes
// the error: each of those layers spells the token differently, and every
// spelling of it is the token.
type Known struct{ forms []string }

// NewKnown returns the Known for s; the zero Known, for an empty s, withholds nothing.
func NewKnown(s string) Known {
	seen := map[string]bool{}
	var forms []string
	add := func(f string) {
		if len(strings.TrimSpace(f)) >= minKnown && !seen[f] {
			seen[f] = true
			forms = append(forms, f)
		}
	}
	for _, base := range spellings(s) {
		quoted := strconv.Quote(base)
		js, _ := json.Marshal(base)
		for _, f := range []string{base, url.PathEscape(base), url.QueryEscape(base), unquote(quoted),
			unquote(strconv.Quote(quoted)), unquote(string(js))} {
			add(f)
		}
	}
	// The longest first, so that a form is withheld whole, not around a shorter one inside it.
	sort.Slice(forms, func(i, j int) bool { return len(forms[i]) > len(forms[j]) })
	return Known{forms: forms}
}

// spellings are s as it came, trimmed of spaces, and out of a matching pair of
// quotes; with the secret half of each that has a ':'.
func spellings(s string) []string {
	trimmed := strings.TrimSpace(s)
	bare := Unquote(trimmed)
	out := []string{s, trimmed, bare}
	for _, b := range []string{s, trimmed, bare} {
		if _, half, ok := strings.Cut(b, ":"); ok {
			out = append(out, half, strings.TrimSpace(half), strings.Trim(strings.TrimSpace(half), `"'`))
		}
	}
	return out
}

// Unquote returns s without a matching pair of quotes (" or ') around it, and
// without the spaces inside them: the form an env file or a shell left a value in.
func Unquote(s string) string {
	if len(s) >= 2 && (s[0] == '"' || s[0] == '\'') && s[len(s)-1] == s[0] {
		return strings.TrimSpace(s[1 : len(s)-1])
	}
	return s
}

func unquote(q string) string { return strings.TrimSuffix(strings.TrimPrefix(q, `"`), `"`) }

// Redact returns s with every spelling of the secret replaced by Withheld.
func (k Known) Redact(s string) string {
	for _, f := range k.forms {
		if strings.Contains(s, f) {
			s = strings.ReplaceAll(s, f, Withheld)
		}
	}
	return s
}
