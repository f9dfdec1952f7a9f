package mcp_test

import (
	"context"
	"encoding/json"
	"strings"
	"testing"

	"github.com/countersign/countersign/policy"
)

// A declared HTTP tool reaches MCP callers as the registry describes it: its
// placeholders and its body schema are the tool's input schema.
func TestDeclaredHTTPToolIsOffered(t *testing.T) {
	t.Setenv("TICKETS_TOKEN", "tok-1b2c3d4e5f6a7b8c")
	r := newRig(t, func(p *policy.Policy) {
		src := `tools:
  commit_create_ticket:
    side_effect: committed
    approval: required
    http:
      method: POST
      url: "https://api.tickets.example/v1/projects/{project}/tickets"
      hosts: ["api.tickets.example"]
      headers: {Authorization: {env: TICKETS_TOKEN}}
      body_schema: {type: object, required: [title], properties: {title: {type: string}}}
      idempotency: header
`
		decl, err := policy.Parse(strings.NewReader(src))
		if err != nil {
			t.Fatal(err)
		}
		p.Tools["commit_create_ticket"] = decl.Tools["commit_create_ticket"]
	})
	cs := r.connect(t, transports[0], nil)
	res, err := cs.ListTools(context.Background(), nil)
	if err != nil {
		t.Fatal(err)
	}
	for _, tool := range res.Tools {
		if tool.Name != "commit_create_ticket" {
			continue
		}
		b, _ := json.Marshal(tool.InputSchema)
		for _, want := range []string{`"required":["project","body"]`, `"body":{"properties":{"title":{"type":"string"}},"required":["title"],"type":"object"}`} {
			if !strings.Contains(string(b), want) {
				t.Errorf("input schema lacks %s:\n%s", want, b)
			}
		}
		if !strings.Contains(tool.Description, "POST https://api.tickets.example/v1/projects/{project}/tickets") {
			t.Errorf("description = %q", tool.Description)
		}
		return
	}
	t.Fatal("commit_create_ticket is not offered")
}
