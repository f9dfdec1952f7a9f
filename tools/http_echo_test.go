package tools_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/countersign/countersign/action"
	"github.com/countersign/countersign/internal/fakeapi"
	"github.com/countersign/countersign/policy"
	"github.com/countersign/countersign/tools"
)

// A payload prepared while the declaration allowed its host, committed after
// the declaration changed to hosts that no longer include it, sends nothing:
// the commit checks the address against the declaration it runs under, not
// the one the payload was prepared under.
func TestAPayloadForAHostNoLongerDeclaredSendsNothing(t *testing.T) {
	srv := fakeapi.New(t)
	p := prepare(t, ticketTool(t, ticketPolicy(t, srv.URL, "header", "")), `{"project": "p1", "body": {"title": "x"}}`)

	// The same tool, now declared against localhost only (the same server,
	// another name).
	moved := strings.Replace(srv.URL, "127.0.0.1", "localhost", 1)
	src := `tools:
  commit_create_ticket:
    side_effect: committed
    approval: required
    http:
      method: POST
      url: "` + moved + `/v1/projects/{project}/tickets"
      hosts: ["localhost"]
      headers:
        Authorization: {env: TICKETS_TOKEN, prefix: "Bearer "}
      body_schema: {type: object, required: [title], properties: {title: {type: string}}}
      success: [200, 201]
      idempotency: header
      timeout: 2s
`
	pol, err := policy.Parse(strings.NewReader(src))
	if err != nil {
		t.Fatal(err)
	}
	_, err = ticketTool(t, pol).Commit(tools.WithOperation(context.Background(), "op-1"), p)
	var re *tools.RefusedError
	if !errors.As(err, &re) || !errors.Is(err, tools.ErrNotSent) {
		t.Fatalf("Commit = %v, want a refusal with nothing sent", err)
	}
	if n := len(srv.Requests()); n != 0 {
		t.Errorf("the service got %d requests for a host no longer declared", n)
	}
}

// A service that echoes the declared secret header back, in its answer's body
// or headers or in a redirect's address, never gets it into an error, the
// evidence or what the journal keeps of either.
func TestASecretEchoedByTheServiceReachesNoErrorNorEvidence(t *testing.T) {
	for _, tc := range []struct {
		name   string
		status int
	}{
		{"a success whose evidence is the echo", 201},
		{"a malformed request", 422},
		{"a refusal", 401},
		{"a rate limit", 429},
		{"a server error", 500},
		{"a redirect elsewhere", 307},
	} {
		t.Run(tc.name, func(t *testing.T) {
			srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				auth := r.Header.Get("Authorization")
				w.Header().Set("X-Echo", auth)
				w.Header().Set("Location", "https://"+strings.TrimPrefix(auth, "Bearer ")+".evil.example/?auth="+auth)
				w.Header().Set("Content-Type", "application/json")
				w.WriteHeader(tc.status)
				bare := strings.TrimPrefix(auth, "Bearer ")
				b, _ := json.Marshal(map[string]any{"id": bare, "error": "bad credentials: " + bare, "headers": r.Header})
				_, _ = w.Write(b)
			}))
			defer srv.Close()
			tool := ticketTool(t, ticketPolicy(t, srv.URL, "header", "/v1/tickets/{operation_id}"))
			p := prepare(t, tool, `{"project": "p1", "body": {"title": "x"}}`)
			ctx := tools.WithOperation(context.Background(), "op-1")
			ev, err := tool.Commit(ctx, p)
			found, _, lerr := tool.(tools.StateReader).Landed(ctx, p)
			kept, _ := json.Marshal([]action.Evidence{ev, found})
			for what, s := range map[string]string{
				"the error": fmt.Sprint(err), "the error, verbose": fmt.Sprintf("%+v", err),
				"the evidence": string(kept), "the reconcile read's error": fmt.Sprint(lerr),
			} {
				if strings.Contains(s, token) {
					t.Errorf("%s holds the secret: %s", what, s)
				}
			}
			if tc.status == 201 && (err != nil || ev.HTTPStatus != 201) {
				t.Errorf("Commit = %+v, %v; want the success recorded", ev, err)
			}
		})
	}
}
