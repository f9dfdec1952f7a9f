package tools

import (
	"bytes"
	_ "embed"
	"encoding/json"
	"fmt"
	"net/http"
	"strings"
	"text/template"

	"github.com/google/jsonschema-go/jsonschema"

	"github.com/countersign/countersign/action"
	"github.com/countersign/countersign/policy"
	"github.com/countersign/countersign/secret"
	"github.com/countersign/countersign/verifier"
)

//go:embed http_tool.md
var httpToolDoc string

var httpToolTemplate = template.Must(template.New("http_tool.md").Parse(httpToolDoc))

// MaxHTTPBody bounds the body of a declared HTTP request, in bytes of its
// canonical JSON: the card shows all of it.
const MaxHTTPBody = 16 << 10

// HTTPTool is a commit tool declared in the policy (policy.HTTP): one HTTP
// request whose method, host, headers and idempotency are fixed by the
// declaration, and whose URL placeholders and JSON body the caller fills in.
// Its class is the declaration's: with an Idempotency-Key it is state-setting
// (an unknown outcome is settled by repeating the request with the same key);
// without one it is additive, unless it has a reconcile read, which makes it a
// StateReader (see NewHTTPTool).
type HTTPTool struct {
	name   string
	decl   policy.HTTP
	schema *jsonschema.Resolved
	env    func(string) string
	client *http.Client
	doc    string
}

// reconciledHTTPTool is an HTTPTool with a reconcile read: its unknown outcomes
// are settled by reading whether the effect exists (Landed).
type reconciledHTTPTool struct{ *HTTPTool }

var (
	_ Classed     = (*HTTPTool)(nil)
	_ Presenter   = (*HTTPTool)(nil)
	_ Checked     = (*HTTPTool)(nil)
	_ StateReader = reconciledHTTPTool{}
)

// NewHTTPTool builds the tool name declares with decl. env is read for the
// header values at commit time; each variable a header names must be set now,
// or the error names it (never its value): a policy the bot cannot honour must
// not start. The tool is a StateReader when decl has a reconcile read.
func NewHTTPTool(name string, decl policy.HTTP, env func(string) string) (Committer, error) {
	t := &HTTPTool{name: name, decl: decl, env: env}
	for _, h := range headersOf(decl) {
		if h.Env != "" && env(h.Env) == "" {
			return nil, fmt.Errorf("tools: %s: environment variable %s is not set (it gives header %s)", name, h.Env, h.Name)
		}
	}
	if decl.BodySchema != nil {
		s, err := policy.CompileSchema(decl.BodySchema)
		if err != nil {
			return nil, fmt.Errorf("tools: %s: body_schema: %w", name, err)
		}
		t.schema = s
	}
	var doc bytes.Buffer
	err := httpToolTemplate.Execute(&doc, map[string]any{"Method": decl.Method, "URL": decl.URL,
		"Placeholders": strings.Join(decl.Placeholders(), ", "), "Body": decl.BodySchema != nil,
		"Key": decl.Idempotency == policy.IdempotencyHeader, "Reconcile": decl.Reconcile != nil})
	if err != nil {
		return nil, fmt.Errorf("tools: %s: %w", name, err)
	}
	t.doc = doc.String()
	t.client = newHTTPClient(decl.RequestTimeout())
	if decl.Reconcile != nil {
		return reconciledHTTPTool{t}, nil
	}
	return t, nil
}

// Name implements Tool.
func (t *HTTPTool) Name() string { return t.name }

// Description implements Tool.
func (t *HTTPTool) Description() string { return t.doc }

// Params implements Tool: each placeholder a required string, and the body
// as its declared schema.
func (t *HTTPTool) Params() Params {
	p := Params{Properties: map[string]any{}}
	for _, n := range t.decl.Placeholders() {
		p.Properties[n] = map[string]any{"type": "string", "description": "fills {" + n + "} in " + t.decl.URL}
		p.Required = append(p.Required, n)
	}
	if t.decl.BodySchema != nil {
		var s map[string]any
		_ = json.Unmarshal(t.decl.BodySchema, &s) // checked by policy.Parse
		p.Properties[policy.BodyArg] = s
		p.Required = append(p.Required, policy.BodyArg)
	}
	return committing(p)
}

// Idempotency implements Classed: the declaration's class.
func (t *HTTPTool) Idempotency() policy.Idempotency { return t.decl.Class() }

// httpShape is what an HTTP tool's arguments look like, for a refusal.
const httpShape = `{"placeholder": "value", "body": {...}}`

// Prepare implements Tool: it fills the URL and checks the body against the
// declared schema. A refusal is an *ArgsError, for the caller to repair.
func (t *HTTPTool) Prepare(raw json.RawMessage) (action.Payload, error) {
	in, err := readArgs(t.name, raw, httpShape)
	if err != nil {
		return action.Payload{}, err
	}
	values := map[string]string{}
	for _, n := range t.decl.Placeholders() {
		if values[n], err = in.string(n, true); err != nil {
			return action.Payload{}, err
		}
	}
	u, err := ExpandURL(t.decl.URL, values)
	if err != nil {
		return action.Payload{}, in.refuse("%v", err)
	}
	if !t.decl.AllowsHost(hostOf(u)) {
		return action.Payload{}, in.refuse("the URL names host %s, which the declaration does not allow", hostOf(u))
	}
	body, err := t.body(in)
	if err != nil {
		return action.Payload{}, err
	}
	req := &action.HTTPRequest{Method: t.decl.Method, URL: u, Headers: headersOf(t.decl), Body: body,
		IdempotencyKey: t.decl.Idempotency == policy.IdempotencyHeader}
	if t.decl.Reconcile != nil {
		if req.Reconcile, err = ExpandURL(t.decl.Reconcile.URL, values, policy.OperationIDPlaceholder); err != nil {
			return action.Payload{}, in.refuse("%v", err)
		}
	}
	shown := indent(body)
	if n := len(Split(shown, MaxMessageUnits)); n > MaxShownMessages {
		return action.Payload{}, in.refuse("body, indented as the approver reads it, takes %d Telegram messages, more than %d: an approver could not read it whole; send a smaller body", n, MaxShownMessages)
	}
	return action.Payload{Action: action.HTTP, Target: hostOf(u), Text: shown, Request: req}, nil
}

// body reads the body argument: a JSON object the schema accepts, in its
// canonical form; "" for a tool that sends none.
func (t *HTTPTool) body(in args) (string, error) {
	v := in.value(policy.BodyArg)
	if t.schema == nil {
		if v != nil {
			return "", in.refuse("this request has no body: leave body out")
		}
		return "", nil
	}
	if v == nil || v[0] != '{' {
		return "", in.refuse("body: want a JSON object, got %s", kindOf(v))
	}
	var plain any
	if err := json.Unmarshal(v, &plain); err != nil {
		return "", in.refuse("body: want a JSON object, got %s", kindOf(v))
	}
	if err := t.schema.Validate(plain); err != nil {
		return "", in.refuse("body does not fit the declared schema: %v", err)
	}
	canon, err := canonicalJSON(v)
	switch {
	case err != nil:
		return "", in.refuse("body: %v", err)
	case len(canon) > MaxHTTPBody:
		return "", in.refuse("body is %d bytes, more than %d", len(canon), MaxHTTPBody)
	case secret.Contains(canon):
		return "", in.refuse("the body contains what looks like a secret (an API key or a token); it is neither sent nor stored")
	}
	return canon, nil
}

// canonicalJSON is v compact, its object keys sorted and each once, numbers
// as written, and <, > and & as themselves: the same body always has the same
// bytes, and the bytes approved are the bytes sent.
func canonicalJSON(v json.RawMessage) (string, error) {
	dec := json.NewDecoder(bytes.NewReader(v))
	dec.UseNumber()
	var x any
	if err := dec.Decode(&x); err != nil {
		return "", err
	}
	var b bytes.Buffer
	enc := json.NewEncoder(&b)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(x); err != nil {
		return "", err
	}
	return strings.TrimSuffix(b.String(), "\n"), nil
}

// indent is a canonical body as the card shows it: the same JSON, indented.
func indent(body string) string {
	if body == "" {
		return ""
	}
	var b bytes.Buffer
	if json.Indent(&b, []byte(body), "", "  ") != nil {
		return body
	}
	return b.String()
}

// Show implements Presenter: the method and address, each header with where its
// value comes from (a secret is never shown), the Idempotency-Key when one is
// sent, the reconcile read, and the body under "Body", every byte of it.
func (t *HTTPTool) Show(p action.Payload) Shown {
	r := p.Request
	if r == nil {
		return Shown{Facts: []string{"An HTTP request with no request in its payload: it cannot be sent."}}
	}
	facts := []string{r.Method + " " + r.URL}
	for _, h := range r.Headers {
		switch {
		case h.Env != "" && h.Prefix != "":
			facts = append(facts, fmt.Sprintf("Header %s: %q then $%s (from the environment, not shown)", h.Name, h.Prefix, h.Env))
		case h.Env != "":
			facts = append(facts, fmt.Sprintf("Header %s: $%s (from the environment, not shown)", h.Name, h.Env))
		default:
			facts = append(facts, fmt.Sprintf("Header %s: %s", h.Name, h.Value))
		}
	}
	if r.Body != "" {
		facts = append(facts, "Header Content-Type: application/json")
	}
	if r.IdempotencyKey {
		facts = append(facts, "Header Idempotency-Key: this operation's id (a service that honours it applies a repeat once)")
	}
	if r.Reconcile != "" {
		facts = append(facts, "If the outcome is unknown: GET "+r.Reconcile+" tells whether it exists")
	}
	s := Shown{Facts: facts, TextLabel: "Body"}
	if r.Body == "" {
		s.TextLabel = ""
		s.Facts = append(s.Facts, "No body.")
	}
	return s
}

// Check implements Checked: the address is the target, not a chat; the body
// is checked as a text (links, house rules), and against an identical one to
// the same host in the duplicate window unless the request sets a state.
func (t *HTTPTool) Check(p action.Payload) verifier.Input {
	in := verifier.Input{Action: p.Action, Target: p.Target, Text: p.Text, NoText: p.Text == "",
		SetsState: t.Idempotency() == policy.StateSetting}
	if p.Request != nil {
		in.URL = p.Request.URL
	}
	return in
}
