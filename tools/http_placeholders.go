package tools

import (
	"net/url"
	"regexp"
	"strings"

	"github.com/countersign/countersign/action"
)

// Placeholder is one value a caller filled into a declared URL, as the
// service will read it (unescaped).
type Placeholder struct {
	Name  string
	Value string
}

// Placeholders returns the URL template t declares and the value each of its
// placeholders took in p's request, in the order they appear; "" and nil for a
// tool that is no declared HTTP tool, or a URL that does not match its
// template (a policy changed since the payload was made).
func Placeholders(t Tool, p action.Payload) (string, []Placeholder) {
	h, ok := t.(*HTTPTool)
	if r, isR := t.(reconciledHTTPTool); isR {
		h, ok = r.HTTPTool, true
	}
	if !ok || h == nil || p.Request == nil {
		return "", nil
	}
	tmpl := h.decl.URL
	path, query, _ := strings.Cut(tmpl, "?")
	var names []string
	var unescape []func(string) (string, error)
	pattern := func(part string, un func(string) (string, error)) string {
		var b strings.Builder
		last := 0
		for _, m := range templatePlaceholder.FindAllStringSubmatchIndex(part, -1) {
			b.WriteString(regexp.QuoteMeta(part[last:m[0]]))
			b.WriteString(`([^/?&#]*)`)
			names = append(names, part[m[2]:m[3]])
			unescape = append(unescape, un)
			last = m[1]
		}
		b.WriteString(regexp.QuoteMeta(part[last:]))
		return b.String()
	}
	expr := pattern(path, url.PathUnescape)
	if strings.Contains(tmpl, "?") {
		expr += `\?` + pattern(query, url.QueryUnescape)
	}
	re, err := regexp.Compile("^" + expr + "$")
	if err != nil {
		return tmpl, nil
	}
	m := re.FindStringSubmatch(p.Request.URL)
	if m == nil {
		return tmpl, nil
	}
	out := make([]Placeholder, len(names))
	for i, n := range names {
		v, err := unescape[i](m[i+1])
		if err != nil {
			v = m[i+1]
		}
		out[i] = Placeholder{Name: n, Value: v}
	}
	return tmpl, out
}
