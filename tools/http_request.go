package tools

import (
	"fmt"
	"net/url"
	"regexp"
	"slices"
	"strings"

	"github.com/countersign/countersign/action"
	"github.com/countersign/countersign/policy"
)

// maxPlaceholderValue bounds one value filled into a URL.
const maxPlaceholderValue = 256

var templatePlaceholder = regexp.MustCompile(`\{([a-z][a-z0-9_]*)\}`)

// ExpandURL fills a declaration's URL template with values: in the path, each
// value is escaped as one segment ("?" included, so it can start no query),
// and a value a server or a front may read as more than one segment is
// refused (see oneSegment); in the query, each is escaped as one value. keep
// names placeholders left as they are (a reconcile URL's {operation_id}). The
// result must still name the template's host. The error says which value is
// wrong, in words for the caller.
func ExpandURL(tmpl string, values map[string]string, keep ...string) (string, error) {
	path, query, hasQuery := strings.Cut(tmpl, "?")
	var bad error
	fill := func(part string, escape func(string) string, inPath bool) string {
		return templatePlaceholder.ReplaceAllStringFunc(part, func(m string) string {
			name := m[1 : len(m)-1]
			for _, k := range keep {
				if name == k {
					return m
				}
			}
			v, ok := values[name]
			switch {
			case !ok:
				bad = fmt.Errorf("%s is missing", name)
			case inPath && !oneSegment(v):
				bad = fmt.Errorf(`%s %q does not name one path segment (no "/", "\", "." or "..", in any spelling)`, name, v)
			case len(v) > maxPlaceholderValue:
				bad = fmt.Errorf("%s is longer than %d bytes", name, maxPlaceholderValue)
			case strings.ContainsFunc(v, func(r rune) bool { return r < 0x20 || r == 0x7f }):
				bad = fmt.Errorf("%s holds a control character", name)
			}
			return escape(v)
		})
	}
	out := fill(path, url.PathEscape, true)
	if hasQuery {
		out += "?" + fill(query, url.QueryEscape, false)
	}
	if bad != nil {
		return "", bad
	}
	want, err := url.Parse(templatePlaceholder.ReplaceAllString(tmpl, "x"))
	got, err2 := url.Parse(out)
	if err != nil || err2 != nil || got.Host != want.Host || got.Scheme != want.Scheme || got.User != nil {
		return "", fmt.Errorf("the values change the URL's host")
	}
	return out, nil
}

// oneSegment reports whether a path value stays one segment wherever it is
// read: escaped, a "/" is still one segment to Go, but a front (nginx, a
// CDN) may decode %2F and clean "../" before the service sees the path, and
// land a request with the declared secret header on another endpoint. So no
// "/" or "\", and no dot segment ("", ".", "..", or one before a ";"
// parameter), in the value or in any of its percent-decodings (%2e%2e,
// %252e%252e).
func oneSegment(v string) bool {
	for range 4 {
		if strings.ContainsAny(v, `/\`) {
			return false
		}
		seg, _, _ := strings.Cut(v, ";")
		if seg == "" || strings.Trim(seg, ".") == "" && len(seg) <= 2 {
			return false
		}
		d, err := url.PathUnescape(v)
		if err != nil || d == v {
			return true // a stray "%" decodes to nothing more
		}
		v = d
	}
	return false // more layers of escaping than any reader undoes: refused
}

// headersOf lists a declaration's headers, sorted by name.
func headersOf(decl policy.HTTP) []action.HTTPHeader {
	var hs []action.HTTPHeader
	for name, v := range decl.Headers {
		hs = append(hs, action.HTTPHeader{Name: name, Env: v.Env, Prefix: v.Prefix, Value: v.Value})
	}
	slices.SortFunc(hs, func(a, b action.HTTPHeader) int { return strings.Compare(a.Name, b.Name) })
	return hs
}

// hostOf is a URL's host name in lower case, without port.
func hostOf(raw string) string {
	u, err := url.Parse(raw)
	if err != nil {
		return ""
	}
	return strings.TrimSuffix(strings.ToLower(u.Hostname()), ".")
}
