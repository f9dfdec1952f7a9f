package policy_test

import (
	"strings"
	"testing"

	"github.com/countersign/countersign/policy"
)

// httpTool is a declared HTTP tool as policies.yaml writes one; tests replace
// a line of it to break it.
const httpTool = `
  commit_create_ticket:
    side_effect: committed
    approval: required
    http:
      method: POST
      url: "https://api.tickets.example/v1/projects/{project}/tickets"
      hosts: ["api.tickets.example"]
      headers:
        Authorization: {env: TICKETS_TOKEN, prefix: "Bearer "}
        Accept: {value: application/json}
      body_schema: {type: object, required: [title], properties: {title: {type: string}}}
      success: [200, 201]
      evidence: /id
      idempotency: header
      reconcile:
        url: "https://api.tickets.example/v1/tickets/by-key/{operation_id}"
`

func parseHTTP(t *testing.T, decl string) (*policy.Policy, error) {
	t.Helper()
	return policy.Parse(strings.NewReader(minimal + decl))
}

func TestParseHTTPTool(t *testing.T) {
	p, err := parseHTTP(t, httpTool)
	if err != nil {
		t.Fatal(err)
	}
	tool := p.Tools["commit_create_ticket"]
	h := tool.HTTP
	if h == nil {
		t.Fatal("no http declaration")
	}
	if got, want := tool.Idempotency, policy.StateSetting; got != want {
		t.Errorf("idempotency = %q, want %q (derived from the header mode)", got, want)
	}
	if got, want := strings.Join(h.Placeholders(), ","), "project"; got != want {
		t.Errorf("placeholders = %s, want %s", got, want)
	}
	if h.Headers["Authorization"] != (policy.HeaderValue{Env: "TICKETS_TOKEN", Prefix: "Bearer "}) {
		t.Errorf("Authorization = %+v", h.Headers["Authorization"])
	}
	if !h.Succeeded(201) || h.Succeeded(204) || h.Evidence != "/id" || h.RequestTimeout() != policy.DefaultHTTPTimeout {
		t.Errorf("success %v evidence %q timeout %s", h.Success, h.Evidence, h.RequestTimeout())
	}
	if h.Reconcile == nil || !strings.Contains(h.Reconcile.URL, "{operation_id}") {
		t.Errorf("reconcile = %+v", h.Reconcile)
	}
}

// The class follows from the declaration: a key or a reconcile read settles
// an unknown outcome; a request with neither adds to the world.
func TestHTTPClassIsDerived(t *testing.T) {
	for _, tc := range []struct {
		name, edit string
		want       policy.Idempotency
	}{
		{"header", "", policy.StateSetting},
		{"none with reconcile", "idempotency: none\n      reconcile: {url: \"https://api.tickets.example/v1/projects/{project}\"}", policy.StateSetting},
		{"none alone", "idempotency: none\n      reconcile: null", policy.Additive},
	} {
		t.Run(tc.name, func(t *testing.T) {
			decl := httpTool
			if tc.edit != "" {
				decl = strings.Replace(decl, "idempotency: header", tc.edit, 1)
				decl = strings.Replace(decl, "      reconcile:\n        url: \"https://api.tickets.example/v1/tickets/by-key/{operation_id}\"\n", "", strings.Count(tc.edit, "reconcile"))
			}
			p, err := parseHTTP(t, decl)
			if err != nil {
				t.Fatal(err)
			}
			if got := p.Class("commit_create_ticket"); got != tc.want {
				t.Errorf("class = %q, want %q", got, tc.want)
			}
		})
	}
}

func TestParseHTTPErrorsNameTheField(t *testing.T) {
	tests := []struct {
		name, old, new string
		want           string
	}{
		{"unknown key", "evidence: /id", "evidance: /id", "http.evidance: unknown key"},
		{"bad method", "method: POST", "method: post", `http.method: want one of`},
		{"host not allowed", `hosts: ["api.tickets.example"]`, `hosts: ["other.example"]`, "http.url: host api.tickets.example is not in hosts"},
		{"placeholder in host", "https://api.tickets.example/v1", "https://{tenant}.tickets.example/v1", "http.url:"},
		{"plain http", "https://api.tickets.example/v1/projects", "http://api.tickets.example/v1/projects", "http.url: plain http only reaches this machine"},
		{"bad placeholder", "{project}", "{Project Name}", "http.url: placeholder {Project Name}"},
		{"reserved placeholder", "{project}", "{body}", "http.url: placeholder {body}: the name is reserved"},
		{"lone brace", "{project}", "{project", "http.url: a { or } that is not part"},
		{"bad env name", "env: TICKETS_TOKEN", "env: tickets-token", "http.headers.Authorization.env: want an environment variable name"},
		{"secret written in", `Authorization: {env: TICKETS_TOKEN, prefix: "Bearer "}`, `Authorization: "Bearer abc"`, "http.headers.Authorization: want {env: NAME}"},
		{"reserved header", "Accept: {value: application/json}", "Idempotency-Key: {value: x}", "http.headers.Idempotency-Key: set by the tool itself"},
		{"bad schema", "body_schema: {type: object", "body_schema: {type: 5, x: 1", "http.body_schema: not a JSON Schema"},
		{"schema not an object", "body_schema: {type: object,", "body_schema: {type: string,", "http.body_schema: not a JSON Schema"},
		{"bad success", "success: [200, 201]", "success: [200, 500]", "http.success[1]: want a 2xx status"},
		{"bad pointer", "evidence: /id", "evidence: id", `http.evidence: want a JSON pointer such as /id, got "id"`},
		{"bad idempotency", "idempotency: header", "idempotency: maybe", `http.idempotency: want one of`},
		{"reconcile placeholder unknown", "by-key/{operation_id}", "by-key/{key}", "http.reconcile.url: placeholder {key} is neither"},
		{"reconcile other host", "https://api.tickets.example/v1/tickets", "https://evil.example/v1/tickets", "http.reconcile.url: host evil.example is not in hosts"},
		{"class contradicted", "    approval: required\n    http:", "    approval: required\n    idempotency: additive\n    http:", `commit_create_ticket.idempotency: the http block makes it "state_setting"`},
		{"not a commit tool", "commit_create_ticket:", "create_ticket:", "create_ticket: a tool name starts with"},
		{"key unknown to the service", "idempotency: header", "idempotency: none", "http.reconcile.url: {operation_id} reaches the service only as the Idempotency-Key"},
		{"timeout too long", "evidence: /id", "evidence: /id\n      timeout: 1h", "http.timeout: must be positive and at most"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			if !strings.Contains(httpTool, tc.old) {
				t.Fatalf("the declaration has no %q", tc.old)
			}
			_, err := parseHTTP(t, strings.Replace(httpTool, tc.old, tc.new, 1))
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("Parse error = %v, want one containing %q", err, tc.want)
			}
		})
	}
}

// A loopback service may be reached over plain http (a local agent, a test).
func TestParseHTTPLoopback(t *testing.T) {
	decl := strings.NewReplacer("https://api.tickets.example", "http://127.0.0.1:8080", `["api.tickets.example"]`, `["127.0.0.1"]`).Replace(httpTool)
	if _, err := parseHTTP(t, decl); err != nil {
		t.Fatal(err)
	}
}

// An auto_approve rule of an HTTP tool names one of its hosts.
func TestAutoApproveNamesAHost(t *testing.T) {
	if _, err := parseHTTP(t, httpTool+"auto_approve:\n  - tool: commit_create_ticket\n    chats: [api.tickets.example]\n"); err != nil {
		t.Fatal(err)
	}
	_, err := parseHTTP(t, httpTool+"auto_approve:\n  - tool: commit_create_ticket\n    chats: [\"222\"]\n")
	if err == nil || !strings.Contains(err.Error(), "want one of the tool's hosts") {
		t.Fatalf("Parse error = %v, want the hosts named", err)
	}
}

// FuzzHTTPDeclaration: no http block makes Parse panic, and one that parses
// names, in its URL and its reconcile URL, only hosts it allows, over https or
// to this machine.
func FuzzHTTPDeclaration(f *testing.F) {
	f.Add(httpTool)
	f.Add(strings.Replace(httpTool, "https://api.tickets.example", "http://127.0.0.1:9", 2))
	f.Add(strings.Replace(httpTool, "api.tickets.example/v1", "api.tickets.example@evil.example/v1", 1))
	f.Add(strings.Replace(httpTool, "/v1/projects/{project}", "/{project}@evil.example", 1))
	f.Add(strings.Replace(httpTool, "/v1/projects/{project}", "\\\\evil.example/{project}", 1))
	f.Add(strings.Replace(httpTool, "body_schema: {", "body_schema: {$ref: \"https://x/y\", ", 1))
	f.Fuzz(func(t *testing.T, decl string) {
		p, err := policy.Parse(strings.NewReader(minimal + decl))
		if err != nil {
			return
		}
		for name, tool := range p.Tools {
			h := tool.HTTP
			if h == nil {
				continue
			}
			urls := []string{h.URL}
			if h.Reconcile != nil {
				urls = append(urls, h.Reconcile.URL)
			}
			for _, u := range urls {
				parsed, err := policy.ParseTemplate(u, h.Hosts)
				if err != nil {
					t.Fatalf("%s: a parsed declaration's URL %q does not check: %v", name, u, err)
				}
				if !h.AllowsHost(parsed.Hostname()) || parsed.Scheme != "https" && !policy.IsLoopback(parsed.Hostname()) {
					t.Fatalf("%s: URL %q reaches %s over %s", name, u, parsed.Hostname(), parsed.Scheme)
				}
			}
			if !strings.HasPrefix(name, "commit_") || tool.Idempotency != h.Class() {
				t.Fatalf("%s: class %q, declaration says %q", name, tool.Idempotency, h.Class())
			}
		}
	})
}
