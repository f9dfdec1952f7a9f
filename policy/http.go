package policy

import (
	"encoding/json"
	"fmt"
	"net"
	"net/url"
	"regexp"
	"slices"
	"strings"
	"time"

	"github.com/google/jsonschema-go/jsonschema"
)

// HTTP declares a commit tool that makes one HTTP request, so that any API call
// can be put behind the approval gate: tools.<name>.http in policies.yaml. The
// request is fixed by the declaration except for what the caller fills in: the
// URL's {placeholders} (each path-escaped, never a host, never a new segment) and
// the body (a JSON object the declared schema accepts). Secrets come from the
// environment by name (HeaderValue.Env) and are never written to the policy, its
// snapshots, the journal, the vault or a card.
type HTTP struct {
	Method string `json:"method"`
	// URL is a template: https://host/path/{name}; the placeholders are the
	// tool's arguments, and may appear in the path and the query only.
	URL string `json:"url"`
	// Hosts are the hosts the expanded URL (and Reconcile's) may name.
	Hosts   []string               `json:"hosts"`
	Headers map[string]HeaderValue `json:"headers,omitempty"`
	// BodySchema is the JSON Schema of the body argument; nil: the request has
	// no body.
	BodySchema json.RawMessage `json:"body_schema,omitempty"`
	// Success lists the statuses that mean the effect is made; empty: any 2xx.
	Success []int `json:"success,omitempty"`
	// Evidence is a JSON pointer (RFC 6901) into a successful answer: the
	// reference of what was made (an id), recorded with the outcome.
	Evidence string `json:"evidence,omitempty"`
	// Idempotency is how a repeat of the request is made safe: IdempotencyHeader
	// or IdempotencyNone.
	Idempotency string `json:"idempotency"`
	// Reconcile, when set, is a GET that tells whether the effect exists, so
	// that an unknown outcome is settled by reading rather than by a person.
	Reconcile *Reconcile `json:"reconcile,omitempty"`
	// Timeout bounds one request, answer included; zero: DefaultHTTPTimeout.
	Timeout time.Duration `json:"timeout,omitempty"`
}

// Reconcile is the read that settles an unknown outcome of an HTTP tool: a GET
// of URL (a template over the tool's placeholders and {operation_id}). A 2xx
// answer says the effect exists, a 404 that it does not; any other leaves the
// outcome unknown, for a person.
type Reconcile struct {
	URL string `json:"url"`
}

// HeaderValue is where a header's value comes from: the environment variable Env
// (read at commit time, written nowhere), after Prefix; or Value, a constant
// that is not secret and is shown on the card.
type HeaderValue struct {
	Env    string `json:"env,omitempty"`
	Prefix string `json:"prefix,omitempty"`
	Value  string `json:"value,omitempty"`
}

// The idempotency modes of an HTTP tool.
const (
	// IdempotencyHeader sends the operation id as Idempotency-Key: a service
	// that honours it applies a repeat once, so an unknown outcome is settled by
	// repeating the request (the class is StateSetting).
	IdempotencyHeader = "header"
	// IdempotencyNone sends no key: a repeat may act twice, so an unknown
	// outcome goes to a person unless a Reconcile read settles it.
	IdempotencyNone = "none"
)

// DefaultHTTPTimeout bounds a declared HTTP request when the declaration does
// not; MaxHTTPTimeout is the longest a declaration may ask for, since the
// operator lets a commit in flight finish even when the process stops.
const (
	DefaultHTTPTimeout = 30 * time.Second
	MaxHTTPTimeout     = 5 * time.Minute
)

// OperationIDPlaceholder is the placeholder of a reconcile URL that stands for
// the operation's id, the Idempotency-Key the request was sent with.
const OperationIDPlaceholder = "operation_id"

// BodyArg is the argument that carries an HTTP tool's body; no placeholder may
// take its name.
const BodyArg = "body"

// ChangedArg is the argument of every commit tool that says what changed since a
// person rejected the same payload (verify.rejected_window); no placeholder may
// take its name.
const ChangedArg = "changed"

var (
	httpMethods = []string{"GET", "POST", "PUT", "PATCH", "DELETE"}
	envName     = regexp.MustCompile(`^[A-Z_][A-Z0-9_]*$`)
	headerName  = regexp.MustCompile("^[!#$%&'*+.^_`|~0-9A-Za-z-]+$")
	// placeholder is one {name} of a URL template.
	placeholder     = regexp.MustCompile(`\{([^{}]*)\}`)
	placeholderName = regexp.MustCompile(`^[a-z][a-z0-9_]{0,63}$`)
	// reservedHeaders are set by the tool itself (or by Go's HTTP client), so a
	// declaration that sets them would say one thing and send another.
	reservedHeaders = []string{"Host", "Content-Length", "Content-Type", "Transfer-Encoding", "Connection", "Idempotency-Key"}
)

// RequestTimeout is the bound of one request: Timeout, else DefaultHTTPTimeout.
func (h *HTTP) RequestTimeout() time.Duration {
	if h.Timeout > 0 {
		return h.Timeout
	}
	return DefaultHTTPTimeout
}

// Placeholders are the names of the URL's placeholders, in order, each once:
// the tool's arguments besides the body.
func (h *HTTP) Placeholders() []string {
	names, _ := templateNames(h.URL)
	return names
}

// Class is the idempotency class the declaration gives its tool: a request sent
// with an Idempotency-Key, or one whose effect can be read back, is settled
// without a person (StateSetting); any other adds to the world (Additive).
func (h *HTTP) Class() Idempotency {
	if h.Idempotency == IdempotencyHeader || h.Reconcile != nil {
		return StateSetting
	}
	return Additive
}

// Succeeded reports whether status means the effect is made.
func (h *HTTP) Succeeded(status int) bool {
	if len(h.Success) == 0 {
		return status >= 200 && status < 300
	}
	return slices.Contains(h.Success, status)
}

// AllowsHost reports whether host (without a port, any case) is one of Hosts.
func (h *HTTP) AllowsHost(host string) bool {
	host = strings.TrimSuffix(strings.ToLower(host), ".")
	return slices.Contains(h.Hosts, host)
}

// IsLoopback reports whether host is this machine, the one host a declared
// request may reach over plain http.
func IsLoopback(host string) bool {
	if strings.EqualFold(host, "localhost") {
		return true
	}
	ip := net.ParseIP(host)
	return ip != nil && ip.IsLoopback()
}

// ValidPointer reports whether p is a JSON pointer (RFC 6901): empty, or "/"
// followed by tokens whose "~" is always "~0" or "~1".
func ValidPointer(p string) bool {
	if p == "" {
		return true
	}
	if p[0] != '/' {
		return false
	}
	for i := 0; i < len(p); i++ {
		if p[i] == '~' && (i+1 == len(p) || p[i+1] != '0' && p[i+1] != '1') {
			return false
		}
	}
	return true
}

// CompileSchema reads a body schema, as Parse checks it and the tool uses it.
func CompileSchema(raw json.RawMessage) (*jsonschema.Resolved, error) {
	var s jsonschema.Schema
	if err := json.Unmarshal(raw, &s); err != nil {
		return nil, err
	}
	if s.Type != "" && s.Type != "object" || len(s.Types) > 0 && !slices.Contains(s.Types, "object") {
		return nil, fmt.Errorf("the body is a JSON object: the schema's type must be \"object\"")
	}
	return s.Resolve(nil)
}

// templateNames returns the placeholder names of a URL template, each once, in
// order; an error for a brace that opens no well-formed {name}.
func templateNames(tmpl string) ([]string, error) {
	var names []string
	for _, m := range placeholder.FindAllStringSubmatch(tmpl, -1) {
		if !placeholderName.MatchString(m[1]) {
			return nil, fmt.Errorf("placeholder {%s}: a name is lower-case letters, digits and _, starting with a letter", m[1])
		}
		if !slices.Contains(names, m[1]) {
			names = append(names, m[1])
		}
	}
	if rest := placeholder.ReplaceAllString(tmpl, ""); strings.ContainsAny(rest, "{}") {
		return nil, fmt.Errorf("a { or } that is not part of a {placeholder}")
	}
	return names, nil
}

// ParseTemplate checks a URL template of a declaration and returns the URL it
// names with every placeholder filled with "x": its scheme and host are fixed
// (placeholders may stand in the path and the query only), it is https unless
// its host is loopback, and the host is one of hosts.
func ParseTemplate(tmpl string, hosts []string) (*url.URL, error) {
	if _, err := templateNames(tmpl); err != nil {
		return nil, err
	}
	u, err := url.Parse(placeholder.ReplaceAllString(tmpl, "x"))
	if err != nil {
		return nil, fmt.Errorf("not a URL: %v", err)
	}
	switch {
	case u.Scheme != "https" && u.Scheme != "http" || u.Opaque != "":
		return nil, fmt.Errorf("want an https:// URL, got %q", tmpl)
	case u.Host == "" || u.User != nil:
		return nil, fmt.Errorf("want a host and no user info, got %q", tmpl)
	case u.Fragment != "" || strings.Contains(tmpl, "#"):
		return nil, fmt.Errorf("a URL sent to a service has no #fragment")
	case u.Scheme == "http" && !IsLoopback(u.Hostname()):
		return nil, fmt.Errorf("plain http only reaches this machine (localhost, 127.0.0.1, ::1): use https for %s", u.Hostname())
	}
	if i := strings.Index(tmpl, "//"); i >= 0 {
		authority := tmpl[i+2:]
		if j := strings.IndexAny(authority, "/?"); j >= 0 {
			authority = authority[:j]
		}
		if strings.ContainsAny(authority, "{}") {
			return nil, fmt.Errorf("the host is fixed: a placeholder may stand in the path or the query only")
		}
	}
	h := &HTTP{Hosts: hosts}
	if !h.AllowsHost(u.Hostname()) {
		return nil, fmt.Errorf("host %s is not in hosts %q", u.Hostname(), hosts)
	}
	return u, nil
}

// validate reports the declaration's problems under field (tools.<name>.http).
func (h *HTTP) validate(field string, add func(field, format string, args ...any)) {
	if !slices.Contains(httpMethods, h.Method) {
		add(field+".method", "want one of %q, got %q", httpMethods, h.Method)
	}
	if len(h.Hosts) == 0 {
		add(field+".hosts", "missing: list the hosts the URL may name")
	}
	for i, host := range h.Hosts {
		if host == "" || host != strings.ToLower(host) || strings.ContainsAny(host, ":/@ ") {
			add(fmt.Sprintf("%s.hosts[%d]", field, i), "want a host name in lower case, without scheme or port, got %q", host)
		}
	}
	names, err := templateNames(h.URL)
	switch {
	case h.URL == "":
		add(field+".url", "missing: the URL template of the request")
	case err != nil:
		add(field+".url", "%v", err)
	default:
		if _, err := ParseTemplate(h.URL, h.Hosts); err != nil {
			add(field+".url", "%v", err)
		}
	}
	for _, n := range names {
		if n == BodyArg || n == OperationIDPlaceholder || n == ChangedArg {
			add(field+".url", "placeholder {%s}: the name is reserved (%s is the body, %s the reconcile key, %s what changed since a rejection)", n, BodyArg, OperationIDPlaceholder, ChangedArg)
		}
	}
	h.validateHeaders(field, add)
	if h.BodySchema != nil {
		if _, err := CompileSchema(h.BodySchema); err != nil {
			add(field+".body_schema", "not a JSON Schema this tool can use: %v", err)
		}
		if h.Method == "GET" {
			add(field+".body_schema", "a GET has no body")
		}
	}
	for i, s := range h.Success {
		if s < 200 || s > 299 {
			add(fmt.Sprintf("%s.success[%d]", field, i), "want a 2xx status, got %d", s)
		}
	}
	if !ValidPointer(h.Evidence) {
		add(field+".evidence", "want a JSON pointer such as /id, got %q", h.Evidence)
	}
	if h.Idempotency != IdempotencyHeader && h.Idempotency != IdempotencyNone {
		add(field+".idempotency", "want %q (send the operation id as Idempotency-Key) or %q, got %q", IdempotencyHeader, IdempotencyNone, h.Idempotency)
	}
	if h.Timeout < 0 || h.Timeout > MaxHTTPTimeout {
		add(field+".timeout", "must be positive and at most %s, got %s", MaxHTTPTimeout, h.Timeout)
	}
	if h.Reconcile != nil {
		h.validateReconcile(field+".reconcile.url", names, add)
	}
}

func (h *HTTP) validateHeaders(field string, add func(field, format string, args ...any)) {
	for name, v := range h.Headers {
		f := field + ".headers." + name
		switch {
		case !headerName.MatchString(name):
			add(f, "not a header name")
		case slices.ContainsFunc(reservedHeaders, func(r string) bool { return strings.EqualFold(r, name) }):
			add(f, "set by the tool itself; a declaration may not set it")
		case v.Env != "" && v.Value != "":
			add(f, "give env (a secret, read from the environment) or value (shown on the card), not both")
		case v.Env == "" && v.Value == "":
			add(f, "missing: env: NAME_OF_VARIABLE, or value: \"...\"")
		case v.Env != "" && !envName.MatchString(v.Env):
			add(f+".env", "want an environment variable name like TICKETS_TOKEN ([A-Z_][A-Z0-9_]*), got %q", v.Env)
		case v.Value != "" && v.Prefix != "":
			add(f+".prefix", "a prefix goes before a value from env")
		case strings.ContainsAny(v.Value+v.Prefix, "\r\n\x00"):
			add(f, "a header value is one line")
		}
	}
}

func (h *HTTP) validateReconcile(field string, names []string, add func(field, format string, args ...any)) {
	rn, err := templateNames(h.Reconcile.URL)
	switch {
	case h.Reconcile.URL == "":
		add(field, "missing: the URL of the GET that tells whether the effect exists")
		return
	case err != nil:
		add(field, "%v", err)
		return
	}
	if _, err := ParseTemplate(h.Reconcile.URL, h.Hosts); err != nil {
		add(field, "%v", err)
	}
	for _, n := range rn {
		if n == OperationIDPlaceholder && h.Idempotency != IdempotencyHeader {
			add(field, "{%s} reaches the service only as the Idempotency-Key: it needs idempotency: %s", n, IdempotencyHeader)
		}
		if n != OperationIDPlaceholder && !slices.Contains(names, n) {
			add(field, "placeholder {%s} is neither {%s} nor a placeholder of url", n, OperationIDPlaceholder)
		}
	}
}
