package telegram_test

import (
	"bytes"
	"encoding/json"
	"fmt"
	"strings"
	"testing"

	"github.com/countersign/countersign/action"
	"github.com/countersign/countersign/internal/fakeapi"
	"github.com/countersign/countersign/journal"
	"github.com/countersign/countersign/operator"
	"github.com/countersign/countersign/policy"
)

// withTickets declares commit_create_ticket, a POST of a JSON body to srv.
func withTickets(t *testing.T, srv *fakeapi.Server) rigOption {
	p, err := policy.Parse(strings.NewReader(`tools:
  commit_create_ticket:
    side_effect: committed
    approval: required
    http:
      method: POST
      url: "` + srv.URL + `/v1/tickets"
      hosts: ["127.0.0.1"]
      body_schema: {type: object, required: [title], properties: {title: {type: string}}}
      evidence: /id
      idempotency: header
`))
	if err != nil {
		t.Fatal(err)
	}
	return withPolicy(func(pol *policy.Policy) { pol.Tools["commit_create_ticket"] = p.Tools["commit_create_ticket"] })
}

// An HTTP body of a few kilobytes is more than one Telegram message once the
// card indents it: it went out inside the card, Telegram answered "message is
// too long", and no approver ever saw a card. Its previews carry the whole body,
// cut to fit, above a card that says so, and the tap sends it.
func TestALongHTTPBodyReachesTheApproverWhole(t *testing.T) {
	t.Parallel()
	srv := fakeapi.New(t)
	r := newRig(t, withTickets(t, srv))
	var notes []string
	for i := range 120 {
		notes = append(notes, fmt.Sprintf("step %03d: check the relay and write down what it reads", i))
	}
	body := map[string]any{"title": "relay audit", "notes": notes}
	res := r.remoteCall("commit_create_ticket", map[string]any{"body": body})
	card := r.cardFor(alice, res.OperationID)

	canon, _ := json.Marshal(body)
	var want bytes.Buffer
	json.Indent(&want, canon, "", "  ")
	var previews []string
	for _, m := range r.srv.Messages(alice) {
		if m.MessageID < card.MessageID && m.MessageID >= card.ReplyTo {
			previews = append(previews, m.Text)
		}
	}
	if got := strings.Join(previews, ""); got != want.String() {
		t.Errorf("the previews above the card hold %d characters of the body, want all %d:\n%s", len(got), want.Len(), excerpt(got))
	}
	if n := len(previews); n < 2 || !strings.Contains(card.Text, fmt.Sprintf("the %d message(s) just above", n)) {
		t.Errorf("%d previews; the card should name them:\n%s", n, card.Text)
	}
	r.tap(alice, card, "Approve")
	r.committed(res.OperationID)
	if got := srv.Requests(); len(got) != 1 || got[0].Body != string(canon) {
		t.Errorf("the service got %d request(s), want the one body approved", len(got))
	}
}

// A body that, indented for the approver, would take more messages than a
// phone can be asked to read is refused at prepare: no card, nothing journaled
// as waiting.
func TestAnHTTPBodyTooLongToShowIsRefusedBeforeAnyCard(t *testing.T) {
	t.Parallel()
	srv := fakeapi.New(t)
	r := newRig(t, withTickets(t, srv))
	// Nested arrays: a few kilobytes of JSON, far more once indented.
	nested := strings.Repeat("[", 400) + strings.Repeat("]", 400)
	var v any
	json.Unmarshal([]byte(nested), &v)
	op := r.remote()
	task, _ := op.StartTask(r.t.Context(), journal.Task{Surface: "mcp", Summary: "mcp session"})
	raw, _ := json.Marshal(map[string]any{"body": map[string]any{"title": "deep", "x": v}})
	got, err := op.Call(r.t.Context(), task.ID, operator.Call{Tool: "commit_create_ticket", Args: raw})
	if err != nil || got.Status != action.StatusRepairable || !strings.Contains(got.Reason, "could not read it whole") {
		t.Fatalf("call = %+v, %v; want refused as too long to show", got, err)
	}
}
