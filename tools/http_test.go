package tools_test

import (
	"context"
	"encoding/json"
	"errors"
	"net/url"
	"strings"
	"testing"
	"time"

	"github.com/countersign/countersign/action"
	"github.com/countersign/countersign/internal/fakeapi"
	"github.com/countersign/countersign/policy"
	"github.com/countersign/countersign/tools"
)

// token is the secret a declared header reads from the environment; it must
// reach the service and nothing else.
const token = "tok-3f9a1c7e55b2d4a8"

// ticketPolicy declares commit_create_ticket against base (the fake's URL),
// with the given idempotency mode and reconcile URL ("" for none).
func ticketPolicy(t testing.TB, base, mode, reconcile string) *policy.Policy {
	t.Helper()
	src := `tools:
  commit_create_ticket:
    side_effect: committed
    approval: required
    http:
      method: POST
      url: "` + base + `/v1/projects/{project}/tickets"
      hosts: ["127.0.0.1"]
      headers:
        Authorization: {env: TICKETS_TOKEN, prefix: "Bearer "}
        Accept: {value: application/json}
      body_schema: {type: object, required: [title], properties: {title: {type: string}}}
      success: [200, 201]
      evidence: /id
      idempotency: ` + mode + `
      timeout: 2s
`
	if reconcile != "" {
		src += "      reconcile: {url: \"" + base + reconcile + "\"}\n"
	}
	p, err := policy.Parse(strings.NewReader(src))
	if err != nil {
		t.Fatal(err)
	}
	return p
}

func env(name string) string {
	if name == "TICKETS_TOKEN" {
		return token
	}
	return ""
}

func ticketTool(t testing.TB, p *policy.Policy) tools.Committer {
	t.Helper()
	r, err := tools.NewRegistry(p, nil, tools.WithEnv(env))
	if err != nil {
		t.Fatal(err)
	}
	tool, _ := r.Get("commit_create_ticket")
	return tool.(tools.Committer)
}

func prepare(t *testing.T, tool tools.Tool, args string) action.Payload {
	t.Helper()
	p, err := tool.Prepare(json.RawMessage(args))
	if err != nil {
		t.Fatalf("Prepare(%s): %v", args, err)
	}
	return p
}

func TestHTTPToolPreparesTheExactRequest(t *testing.T) {
	tool := ticketTool(t, ticketPolicy(t, "http://127.0.0.1:9", "header", ""))
	p := prepare(t, tool, `{"project": "a b?c", "body": {"title": "Printer <on fire>", "z": 1.50, "a": [1]}}`)
	r := p.Request
	if p.Action != action.HTTP || p.Target != "127.0.0.1" {
		t.Errorf("action %q target %q, want http_request to the host", p.Action, p.Target)
	}
	if want := "http://127.0.0.1:9/v1/projects/a%20b%3Fc/tickets"; r.URL != want {
		t.Errorf("URL = %s, want %s", r.URL, want)
	}
	if want := `{"a":[1],"title":"Printer <on fire>","z":1.50}`; r.Body != want {
		t.Errorf("body = %s, want the canonical %s", r.Body, want)
	}
	if !strings.Contains(p.Text, "\n  \"title\": \"Printer <on fire>\"") {
		t.Errorf("text = %q, want the body indented", p.Text)
	}
	if !r.IdempotencyKey || len(r.Headers) != 2 || r.Headers[1] != (action.HTTPHeader{Name: "Authorization", Env: "TICKETS_TOKEN", Prefix: "Bearer "}) {
		t.Errorf("request = %+v", r)
	}
	b, _ := json.Marshal(p)
	if strings.Contains(string(b), token) {
		t.Error("the payload holds the secret")
	}
	// The same body, written otherwise, is the same payload.
	same := prepare(t, tool, `{"body": {"z": 1.50, "a": [ 1 ], "title": "Printer <on fire>"}, "project": "a b?c"}`)
	if same.SHA256() != p.SHA256() {
		t.Error("the same call, keys in another order, hashes differently")
	}
	changed := p
	changed.Request = &action.HTTPRequest{Method: r.Method, URL: r.URL, Headers: r.Headers, Body: r.Body}
	if changed.SHA256() == p.SHA256() {
		t.Error("a request without its Idempotency-Key hashes like one with it")
	}
}

func TestHTTPToolRefusesArguments(t *testing.T) {
	tool := ticketTool(t, ticketPolicy(t, "http://127.0.0.1:9", "none", ""))
	for _, tc := range []struct{ args, want string }{
		{`{"body": {"title": "x"}}`, "project is missing"},
		{`{"project": "..", "body": {"title": "x"}}`, `project ".." does not name one path segment`},
		{`{"project": "p", "body": {"titel": "x"}}`, "body does not fit the declared schema"},
		{`{"project": "p", "body": "title"}`, "body: want a JSON object"},
		{`{"project": "p"}`, "body: want a JSON object, got nothing"},
		{`{"project": "p", "body": {"title": "key sk-ant-api03-` + strings.Repeat("a", 93) + `AA"}}`, "looks like a secret"},
	} {
		_, err := tool.Prepare(json.RawMessage(tc.args))
		var ae *tools.ArgsError
		if !errors.As(err, &ae) || !strings.Contains(ae.Reason, tc.want) {
			t.Errorf("Prepare(%.60s) = %v, want an ArgsError with %q", tc.args, err, tc.want)
		}
	}
}

func TestHTTPToolParamsAndCard(t *testing.T) {
	tool := ticketTool(t, ticketPolicy(t, "http://127.0.0.1:9", "header", "/by-key/{operation_id}"))
	ps := tool.Params()
	if strings.Join(ps.Required, ",") != "project,body" || ps.Properties["body"].(map[string]any)["type"] != "object" {
		t.Errorf("params = %+v", ps)
	}
	if _, ok := tool.(tools.StateReader); !ok || tools.ClassOf(tool) != policy.StateSetting {
		t.Error("a tool with a reconcile read is not a state reader")
	}
	p := prepare(t, tool, `{"project": "p", "body": {"title": "x"}}`)
	s := tools.ShowOf(tool, p)
	facts := strings.Join(s.Facts, "\n")
	for _, want := range []string{"POST http://127.0.0.1:9/v1/projects/p/tickets", `Header Authorization: "Bearer " then $TICKETS_TOKEN (from the environment, not shown)`,
		"Header Accept: application/json", "Header Idempotency-Key", "GET http://127.0.0.1:9/by-key/{operation_id}"} {
		if !strings.Contains(facts, want) {
			t.Errorf("facts lack %q:\n%s", want, facts)
		}
	}
	if s.TextLabel != "Body" || s.Omitted != "" {
		t.Errorf("label %q omitted %q", s.TextLabel, s.Omitted)
	}
	in := tools.CheckOf(tool, p)
	if in.URL != p.Request.URL || in.Target != "127.0.0.1" || !in.SetsState {
		t.Errorf("check input = %+v", in)
	}
}

func TestHTTPToolNeedsItsVariables(t *testing.T) {
	_, err := tools.NewRegistry(ticketPolicy(t, "http://127.0.0.1:9", "none", ""), nil, tools.WithEnv(func(string) string { return "" }))
	if err == nil || !strings.Contains(err.Error(), "environment variable TICKETS_TOKEN is not set") {
		t.Fatalf("NewRegistry = %v, want the variable named", err)
	}
}

// commit makes one commit of a ticket against the fake, as operation id.
func commit(t *testing.T, tool tools.Committer, id string) (action.Evidence, error) {
	t.Helper()
	p := prepare(t, tool, `{"project": "p1", "body": {"title": "Printer on fire"}}`)
	return tool.Commit(tools.WithOperation(context.Background(), id), p)
}

func TestHTTPToolCommitClassifiesTheAnswer(t *testing.T) {
	const path = "/v1/projects/p1/tickets"
	date := time.Now().Add(90 * time.Second).UTC().Format("Mon, 02 Jan 2006 15:04:05 GMT")
	tests := []struct {
		name  string
		step  fakeapi.Step
		check func(error) bool
	}{
		{"429 with seconds", fakeapi.Step{Mode: fakeapi.TooMany, RetryAfter: "7"}, func(err error) bool {
			var ra *tools.RetryAfterError
			return errors.As(err, &ra) && ra.After == 7*time.Second
		}},
		{"503 with a date", fakeapi.Step{Mode: fakeapi.Unavailable, RetryAfter: date}, func(err error) bool {
			var ra *tools.RetryAfterError
			return errors.As(err, &ra) && ra.After > 80*time.Second && ra.After <= 90*time.Second
		}},
		{"503 without Retry-After", fakeapi.Step{Mode: fakeapi.Unavailable}, func(err error) bool { return errors.Is(err, tools.ErrOutcomeUnknown) }},
		{"422", fakeapi.Step{Mode: fakeapi.Status, Status: 422, Body: `{"error":"title too long"}`}, func(err error) bool {
			var re *tools.RepairError
			return errors.As(err, &re) && strings.Contains(err.Error(), "title too long")
		}},
		{"403", fakeapi.Step{Mode: fakeapi.Status, Status: 403}, func(err error) bool {
			var re *tools.RefusedError
			return errors.As(err, &re)
		}},
		{"502", fakeapi.Step{Mode: fakeapi.Status, Status: 502}, func(err error) bool { return errors.Is(err, tools.ErrOutcomeUnknown) }},
		{"202, not declared a success", fakeapi.Step{Mode: fakeapi.Status, Status: 202}, func(err error) bool { return errors.Is(err, tools.ErrOutcomeUnknown) }},
		{"answer lost", fakeapi.Step{Mode: fakeapi.LoseAnswer}, func(err error) bool { return errors.Is(err, tools.ErrOutcomeUnknown) }},
		{"no answer in time", fakeapi.Step{Mode: fakeapi.Hang}, func(err error) bool { return errors.Is(err, tools.ErrOutcomeUnknown) }},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			srv := fakeapi.New(t)
			srv.Script(path, tc.step)
			_, err := commit(t, ticketTool(t, ticketPolicy(t, srv.URL, "header", "")), "op-1")
			if !tc.check(err) {
				t.Fatalf("Commit = %v (%T)", err, err)
			}
			if strings.Contains(err.Error(), token) {
				t.Errorf("the error holds the secret: %v", err)
			}
		})
	}
}

func TestHTTPToolCommitSendsKeyAndSecret(t *testing.T) {
	srv := fakeapi.New(t)
	ev, err := commit(t, ticketTool(t, ticketPolicy(t, srv.URL, "header", "")), "op-7k2m9q")
	if err != nil {
		t.Fatal(err)
	}
	if ev.HTTPStatus != 201 || ev.Ref != "T-1" {
		t.Errorf("evidence = %+v, want 201 and T-1", ev)
	}
	req := srv.Requests()[0]
	if got := req.Header.Get("Idempotency-Key"); got != "op-7k2m9q" {
		t.Errorf("Idempotency-Key = %q, want the operation id", got)
	}
	if got := req.Header.Get("Authorization"); got != "Bearer "+token {
		t.Errorf("Authorization = %q, want the variable's value after its prefix", got)
	}
	if req.Body != `{"title":"Printer on fire"}` || req.Header.Get("Content-Type") != "application/json" {
		t.Errorf("body %q type %q", req.Body, req.Header.Get("Content-Type"))
	}
}

func TestHTTPToolWithoutKeySendsNone(t *testing.T) {
	srv := fakeapi.New(t)
	if _, err := commit(t, ticketTool(t, ticketPolicy(t, srv.URL, "none", "")), "op-1"); err != nil {
		t.Fatal(err)
	}
	if got := srv.Requests()[0].Header.Get("Idempotency-Key"); got != "" {
		t.Errorf("Idempotency-Key = %q, want none", got)
	}
}

// A redirect to another host is not followed: the other host hears nothing,
// and a 307 (the request not applied) is a refusal, not an unknown.
func TestHTTPToolDoesNotFollowARedirectElsewhere(t *testing.T) {
	srv, other := fakeapi.New(t), fakeapi.New(t)
	elsewhere := strings.Replace(other.URL, "127.0.0.1", "localhost", 1) + "/steal"
	srv.Script("/v1/projects/p1/tickets", fakeapi.Step{Mode: fakeapi.Redirect, Location: elsewhere})
	_, err := commit(t, ticketTool(t, ticketPolicy(t, srv.URL, "header", "")), "op-1")
	var re *tools.RefusedError
	if !errors.As(err, &re) || !strings.Contains(re.Reason, "not followed") {
		t.Fatalf("Commit = %v, want a refusal that says the redirect was not followed", err)
	}
	if n := len(other.Requests()); n != 0 {
		t.Errorf("the other host got %d requests", n)
	}
}

// A request to a host that refuses the connection was never written: a retry
// is safe.
func TestHTTPToolNotSentWhenRefused(t *testing.T) {
	closed := ticketTool(t, ticketPolicy(t, "http://127.0.0.1:1", "none", ""))
	if _, err := commit(t, closed, "op-1"); !errors.Is(err, tools.ErrNotSent) {
		t.Fatalf("Commit to a closed port = %v, want ErrNotSent", err)
	}
}

func TestHTTPToolLanded(t *testing.T) {
	srv := fakeapi.New(t)
	tool := ticketTool(t, ticketPolicy(t, srv.URL, "header", "/by-key/{operation_id}"))
	reader := tool.(tools.StateReader)
	p := prepare(t, tool, `{"project": "p1", "body": {"title": "x"}}`)
	ctx := tools.WithOperation(context.Background(), "op-1")
	if _, landed, err := reader.Landed(ctx, p); err != nil || landed {
		t.Fatalf("Landed before = %v, %v; want not landed", landed, err)
	}
	if _, err := tool.Commit(ctx, p); err != nil {
		t.Fatal(err)
	}
	ev, landed, err := reader.Landed(ctx, p)
	if err != nil || !landed || ev.Ref != "T-1" {
		t.Fatalf("Landed after = %+v, %v, %v; want T-1 landed", ev, landed, err)
	}
	srv.Script("/by-key/op-1", fakeapi.Step{Mode: fakeapi.Status, Status: 500})
	if _, _, err := reader.Landed(ctx, p); err == nil {
		t.Fatal("Landed on a 500 = nil error, want the outcome left unknown")
	}
}

// A path placeholder's value that a front could read as more than one
// segment is refused at prepare, for the caller to repair: escaped as one
// segment it reaches Go's server intact, but nginx-style fronts decode %2F
// and clean "../", and the request, with the declared secret header, would
// land on another endpoint. A query value may hold any of these.
func TestAPathValueThatCouldWalkUpIsRefusedAtPrepare(t *testing.T) {
	srv := fakeapi.New(t)
	tool := ticketTool(t, ticketPolicy(t, srv.URL, "none", ""))
	for _, v := range []string{
		"../../admin/users?x=", "a/b", `a\b`, ".", "..", "", "%2e%2e", "%2E", ".%2e", "%252e%252e",
		"%2fadmin", "%5cadmin", "%252Fadmin", "..;x", ".;", "%2e%2e;jsessionid=1",
	} {
		args, _ := json.Marshal(map[string]any{"project": v, "body": map[string]string{"title": "x"}})
		_, err := tool.Prepare(args)
		var ae *tools.ArgsError
		if !errors.As(err, &ae) || !strings.Contains(ae.Reason, "does not name one path segment") {
			t.Errorf("project %q: %v, want a refusal to repair", v, err)
		}
	}
	for _, v := range []string{"p1", "a b", "...", "100%", "v1.2", "a;b", "%zz"} {
		args, _ := json.Marshal(map[string]any{"project": v, "body": map[string]string{"title": "x"}})
		if _, err := tool.Prepare(args); err != nil {
			t.Errorf("project %q: %v, want it prepared", v, err)
		}
	}
	if n := len(srv.Requests()); n != 0 {
		t.Errorf("the service got %d requests at prepare", n)
	}
	got, err := tools.ExpandURL("https://api.example/v1/p/{p}?q={q}", map[string]string{"p": "x", "q": "../../a/b"})
	if err != nil || got != "https://api.example/v1/p/x?q=..%2F..%2Fa%2Fb" {
		t.Errorf("a query value: %q, %v", got, err)
	}
}

// FuzzHTTPArguments: whatever a caller puts in a placeholder, the URL keeps the
// declared host, path segments and query keys.
func FuzzHTTPArguments(f *testing.F) {
	for _, s := range []string{"p1", "../admin", "a/b", "x?admin=1", "x#frag", "@evil.example", "%2e%2e", "a b", "\x00", "é/..", "//evil.example"} {
		f.Add(s, s)
	}
	const tmpl = "https://api.tickets.example/v1/projects/{project}/tickets?q={q}&fixed=1"
	f.Fuzz(func(t *testing.T, project, q string) {
		got, err := tools.ExpandURL(tmpl, map[string]string{"project": project, "q": q})
		if err != nil {
			return
		}
		u, err := url.Parse(got)
		if err != nil {
			t.Fatalf("ExpandURL = %q, which does not parse: %v", got, err)
		}
		if u.Host != "api.tickets.example" || u.User != nil || u.Fragment != "" {
			t.Fatalf("ExpandURL = %q: host %q", got, u.Host)
		}
		segs := strings.Split(u.EscapedPath(), "/")
		if len(segs) != 5 || segs[1] != "v1" || segs[2] != "projects" || segs[4] != "tickets" {
			t.Fatalf("ExpandURL = %q: path %q", got, u.EscapedPath())
		}
		if seg, _ := url.PathUnescape(segs[3]); seg != project || seg == "." || seg == ".." || strings.ContainsAny(seg, `/\`) {
			t.Fatalf("ExpandURL = %q: segment %q, want %q", got, seg, project)
		}
		query := u.Query()
		if len(query) != 2 || query.Get("q") != q || query.Get("fixed") != "1" {
			t.Fatalf("ExpandURL = %q: query %v", got, query)
		}
	})
}

// The class follows from the declaration: a key (the service applies a repeat
// once) or a reconcile read (the effect can be looked up) lets the operator
// settle an unknown outcome; neither, and a person must.
func TestHTTPToolClass(t *testing.T) {
	for _, tc := range []struct {
		mode, reconcile string
		want            policy.Idempotency
		reads           bool
	}{
		{"header", "", policy.StateSetting, false},
		{"none", "", policy.Additive, false},
		{"none", "/v1/projects/{project}/tickets", policy.StateSetting, true},
		{"header", "/by-key/{operation_id}", policy.StateSetting, true},
	} {
		tool := ticketTool(t, ticketPolicy(t, "http://127.0.0.1:9", tc.mode, tc.reconcile))
		_, reads := tool.(tools.StateReader)
		if got := tools.ClassOf(tool); got != tc.want || reads != tc.reads {
			t.Errorf("%s %q: class %s, reads %v; want %s, %v", tc.mode, tc.reconcile, got, reads, tc.want, tc.reads)
		}
		p := prepare(t, tool, `{"project": "p", "body": {"title": "x"}}`)
		if in := tools.CheckOf(tool, p); in.SetsState != (tc.want == policy.StateSetting) {
			t.Errorf("%s %q: the verifier's duplicate check applies: %v", tc.mode, tc.reconcile, !in.SetsState)
		}
	}
}
