package operator_test

import (
	"bytes"
	"context"
	"encoding/json"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/countersign/countersign/action"
	"github.com/countersign/countersign/command"
	"github.com/countersign/countersign/internal/fakeapi"
	"github.com/countersign/countersign/journal"
	"github.com/countersign/countersign/operator"
	"github.com/countersign/countersign/policy"
	"github.com/countersign/countersign/tools"
)

// ticketToken is the secret the declared header reads from the environment.
const ticketToken = "tok-8c1e4b7a93d2f605"

const ticketPath = "/v1/projects/p1/tickets"

// withTickets declares commit_create_ticket against a fresh fake service, with
// the idempotency mode and reconcile path ("" for none) given, and reopens h.
func withTickets(t *testing.T, h *harness, mode, reconcile string) *fakeapi.Server {
	t.Helper()
	srv := fakeapi.New(t)
	t.Setenv("TICKETS_TOKEN", ticketToken)
	src := `tools:
  commit_create_ticket:
    side_effect: committed
    approval: required
    http:
      method: POST
      url: "` + srv.URL + `/v1/projects/{project}/tickets"
      hosts: ["127.0.0.1"]
      headers:
        Authorization: {env: TICKETS_TOKEN, prefix: "Bearer "}
      body_schema: {type: object, required: [title], properties: {title: {type: string}}}
      evidence: /id
      idempotency: ` + mode + `
      timeout: 5s
`
	if reconcile != "" {
		src += "      reconcile: {url: \"" + srv.URL + reconcile + "\"}\n"
	}
	p, err := policy.Parse(strings.NewReader(src))
	if err != nil {
		t.Fatal(err)
	}
	h.pol.Tools["commit_create_ticket"] = p.Tools["commit_create_ticket"]
	h.open()
	return srv
}

// ticket calls commit_create_ticket; it must end pending, waiting for a tap.
func (h *harness) ticket(title string) string {
	h.t.Helper()
	ctx := context.Background()
	task, err := h.op.StartTask(ctx, journal.Task{Requester: operatorID, Chat: "1", Summary: "ticket"})
	if err != nil {
		h.t.Fatal(err)
	}
	args, _ := json.Marshal(map[string]any{"project": "p1", "body": map[string]any{"title": title}})
	r, err := h.op.Call(ctx, task.ID, operator.Call{Tool: "commit_create_ticket", Args: args})
	if err != nil {
		h.t.Fatal(err)
	}
	if r.Status != action.StatusPending {
		h.t.Fatalf("Call = %+v, want pending: an HTTP commit needs a tap", r)
	}
	return r.OperationID
}

func (h *harness) approve(opID string) action.Result {
	h.t.Helper()
	r, err := h.op.Decide(context.Background(), h.approval(opID), approverID, true)
	if err != nil {
		h.t.Fatal(err)
	}
	return r
}

func (h *harness) reasons(opID string) []string {
	h.t.Helper()
	ts, err := h.j.Transitions(context.Background(), opID)
	if err != nil {
		h.t.Fatal(err)
	}
	var rs []string
	for _, tr := range ts {
		rs = append(rs, tr.Reason)
	}
	return rs
}

// An HTTP tool goes through the gate as every commit does: a card that shows
// the request, a tap, one request carrying the operation id as its key, and
// the answer's id as the evidence. Its secret reaches the service and nothing
// else: not the journal, the vault, the card or the log.
func TestHTTPToolThroughTheGate(t *testing.T) {
	h := newHarness(t)
	srv := withTickets(t, h, policy.IdempotencyHeader, "")
	opID := h.ticket("Printer on fire")
	if n := len(srv.Requests()); n != 0 {
		t.Fatalf("%d requests before the tap", n)
	}
	op, err := h.j.Operation(context.Background(), opID)
	if err != nil {
		t.Fatal(err)
	}
	tool, _ := h.op.Tool("commit_create_ticket")
	shown := tools.ShowOf(tool, op.Payload)
	card := command.Facts(shown) + "\n" + shown.TextLabel + ":\n" + op.Payload.Text
	for _, want := range []string{"POST " + srv.URL + ticketPath, "$TICKETS_TOKEN (from the environment, not shown)", "Idempotency-Key", `"title": "Printer on fire"`} {
		if !strings.Contains(card, want) {
			t.Errorf("card lacks %q:\n%s", want, card)
		}
	}
	r := h.approve(opID)
	if r.Status != action.StatusSucceeded || r.Evidence == nil || r.Evidence.Ref != "T-1" || r.Evidence.HTTPStatus != 201 {
		t.Fatalf("Decide = %+v, want succeeded with ref T-1", r)
	}
	reqs := srv.Requests()
	if len(reqs) != 1 || reqs[0].Header.Get("Idempotency-Key") != opID || reqs[0].Header.Get("Authorization") != "Bearer "+ticketToken {
		t.Fatalf("requests = %+v, want one with key %s and the token", reqs, opID)
	}
	h.j.Close()
	assertNowhere(t, ticketToken, h.file, h.vaultDir, card, h.logs.String())
}

// assertNowhere fails when secret is in any file under the paths, or in the texts.
func assertNowhere(t *testing.T, secret string, paths ...string) {
	t.Helper()
	for _, p := range paths {
		if strings.Contains(p, secret) {
			t.Errorf("a text holds the secret:\n%s", p)
		}
		_ = filepath.WalkDir(p, func(path string, d fs.DirEntry, err error) error {
			if err != nil || d.IsDir() {
				return nil
			}
			b, _ := os.ReadFile(path)
			if bytes.Contains(b, []byte(secret)) {
				t.Errorf("%s holds the secret", path)
			}
			return nil
		})
	}
	matches, _ := filepath.Glob(paths[0] + "*") // the journal's -wal and -shm files too
	for _, m := range matches {
		if b, _ := os.ReadFile(m); bytes.Contains(b, []byte(secret)) {
			t.Errorf("%s holds the secret", m)
		}
	}
}

// An answer lost after the service applied the request, with a key the
// service honours: the operator repeats it with the same key, the service
// applies it once, and the outcome is settled without a person.
func TestHTTPLostAnswerWithKeyIsSettledByRepeating(t *testing.T) {
	h := newHarness(t)
	srv := withTickets(t, h, policy.IdempotencyHeader, "")
	srv.Script(ticketPath, fakeapi.Step{Mode: fakeapi.LoseAnswer})
	opID := h.ticket("Printer on fire")
	r := h.approve(opID)
	if r.Status != action.StatusSucceeded || r.Reason != operator.ReasonSettled || r.Evidence == nil || r.Evidence.Ref != "T-1" {
		t.Fatalf("Decide = %+v, want settled with the first effect's id", r)
	}
	if !slices.Contains(h.reasons(opID), operator.ReasonSettled) {
		t.Errorf("reasons = %q, want %q", h.reasons(opID), operator.ReasonSettled)
	}
	if n := len(srv.Effects()); n != 1 {
		t.Errorf("%d effects, want exactly one", n)
	}
	for _, req := range srv.Requests() {
		if req.Header.Get("Idempotency-Key") != opID {
			t.Errorf("a request carried key %q, want %s on every attempt", req.Header.Get("Idempotency-Key"), opID)
		}
	}
}

// Without a key but with a reconcile read, a lost answer is settled by
// reading whether the effect exists: it does (committed) or it does not (not
// delivered, for a /retry), and the request is never repeated blindly.
func TestHTTPLostAnswerIsSettledByReading(t *testing.T) {
	for _, tc := range []struct {
		name    string
		step    fakeapi.Mode
		effects int
		reason  string
		state   journal.State
	}{
		{"the effect exists", fakeapi.LoseAnswer, 1, operator.ReasonSettledByReading, journal.Committed},
		{"the effect does not exist", fakeapi.LoseRequest, 0, operator.ReasonNotInEffect, journal.NotDelivered},
	} {
		t.Run(tc.name, func(t *testing.T) {
			h := newHarness(t)
			srv := withTickets(t, h, policy.IdempotencyNone, "/v1/projects/{project}/tickets")
			srv.Script(ticketPath, fakeapi.Step{Mode: tc.step})
			opID := h.ticket("Printer on fire")
			h.approve(opID)
			if got := h.state(opID); got != tc.state {
				t.Errorf("state = %s, want %s", got, tc.state)
			}
			if !slices.Contains(h.reasons(opID), tc.reason) {
				t.Errorf("reasons = %q, want %q", h.reasons(opID), tc.reason)
			}
			if n := len(srv.Effects()); n != tc.effects {
				t.Errorf("%d effects, want %d", n, tc.effects)
			}
			var posts int
			for _, req := range srv.Requests() {
				if req.Method == "POST" {
					posts++
				}
			}
			if posts != 1 {
				t.Errorf("%d POSTs, want one: a request without a key is never repeated", posts)
			}
		})
	}
}

// Without a key and without a reconcile read, a lost answer is unknown: an
// envelope and a person, and no second request.
func TestHTTPLostAnswerWithoutKeyIsUnknown(t *testing.T) {
	h := newHarness(t)
	srv := withTickets(t, h, policy.IdempotencyNone, "")
	srv.Script(ticketPath, fakeapi.Step{Mode: fakeapi.LoseAnswer})
	opID := h.ticket("Printer on fire")
	r := h.approve(opID)
	if r.SideEffect != action.SideEffectUnknown || r.NextAction != action.NextVerify || h.state(opID) != journal.Unknown {
		t.Fatalf("Decide = %+v (state %s), want unknown, to verify", r, h.state(opID))
	}
	if n := len(srv.Requests()); n != 1 {
		t.Errorf("%d requests, want one", n)
	}
	if e, _, err := h.vault.Get(opID); err != nil || e.Target != "127.0.0.1" {
		t.Errorf("envelope = %+v, %v; want one, naming the host", e, err)
	}
	h.j.Close()
	assertNowhere(t, ticketToken, h.file, h.vaultDir, h.logs.String())
}

// A 429 with Retry-After is waited out and retried: nothing happened the first
// time, so the second request is the only effect.
func TestHTTPTooManyRequestsIsRetriedAfterTheWait(t *testing.T) {
	h := newHarness(t)
	srv := withTickets(t, h, policy.IdempotencyNone, "")
	srv.Script(ticketPath, fakeapi.Step{Mode: fakeapi.TooMany, RetryAfter: "3"})
	opID := h.ticket("Printer on fire")
	r := h.approve(opID)
	if r.Status != action.StatusSucceeded {
		t.Fatalf("Decide = %+v, want succeeded after the wait", r)
	}
	if !slices.Contains(h.clock.Waits(), 3*time.Second) {
		t.Errorf("waits = %v, want the service's 3s", h.clock.Waits())
	}
	if n, e := len(srv.Requests()), len(srv.Effects()); n != 2 || e != 1 {
		t.Errorf("%d requests, %d effects; want 2 and 1", n, e)
	}
}

// A redirect to another host is not followed: the commit stops, and the other
// host hears nothing.
func TestHTTPRedirectElsewhereIsNotFollowed(t *testing.T) {
	h := newHarness(t)
	srv := withTickets(t, h, policy.IdempotencyHeader, "")
	other := fakeapi.New(t)
	srv.Script(ticketPath, fakeapi.Step{Mode: fakeapi.Redirect, Location: strings.Replace(other.URL, "127.0.0.1", "localhost", 1) + "/x"})
	opID := h.ticket("Printer on fire")
	r := h.approve(opID)
	if r.Status != action.StatusTerminal || h.state(opID) != journal.Failed {
		t.Fatalf("Decide = %+v, want a stop", r)
	}
	if n := len(other.Requests()); n != 0 {
		t.Errorf("the other host got %d requests", n)
	}
}
