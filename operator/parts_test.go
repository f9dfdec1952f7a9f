package operator_test

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/countersign/countersign/action"
	"github.com/countersign/countersign/journal"
	"github.com/countersign/countersign/tools"
)

// long is three parts, one paragraph of a, b and c each.
var long = strings.Repeat("a", 4000) + "\n\n" + strings.Repeat("b", 4000) + "\n\n" + strings.Repeat("c", 4000)

func texts(ms []tools.Message) []string {
	var out []string
	for _, m := range ms {
		out = append(out, m.Text[:1])
	}
	return out
}

func TestPartsResumeAfterARetryWithoutResending(t *testing.T) {
	t.Parallel()
	h := newHarness(t, nil, rateLimited(time.Second), nil, nil)
	_, opID := h.send("222", long)
	r, err := h.op.Decide(context.Background(), h.approval(opID), approverID, true)
	if err != nil || r.Status != action.StatusSucceeded {
		t.Fatalf("Decide = %+v, %v", r, err)
	}
	sent := h.sender.Sent()
	if got := strings.Join(texts(sent), ""); got != "abbc" {
		t.Errorf("sends = %s, want a, b (429), b, c: part 1 never twice", got)
	}
	var joined string
	for _, m := range []tools.Message{sent[0], sent[2], sent[3]} {
		joined += m.Text
	}
	if joined != long {
		t.Error("delivered parts do not concatenate to the text")
	}
	if len(r.Evidence.MessageIDs) != 3 {
		t.Errorf("evidence = %+v, want three message ids", r.Evidence)
	}
	as, _ := h.j.Attempts(context.Background(), opID)
	if len(as) != 4 || as[1].Outcome != "retry" {
		t.Errorf("attempts = %+v, want 4 with the second a retry", as)
	}
}

func TestPartUnknownThenResolvedResumesAtThatPart(t *testing.T) {
	t.Parallel()
	h := newHarness(t, nil, unknown, nil, nil)
	ctx := context.Background()
	_, opID := h.send("222", long)
	r, _ := h.op.Decide(ctx, h.approval(opID), approverID, true)
	if r.SideEffect != action.SideEffectUnknown || !strings.Contains(r.Reason, "parts 1-1 of 3 were delivered") {
		t.Fatalf("result = %+v, want unknown naming the delivered part", r)
	}
	if _, err := h.op.Resolve(ctx, opID, false, "tester"); err != nil {
		t.Fatal(err)
	}
	if _, err := h.op.Retry(ctx, opID); err != nil {
		t.Fatal(err)
	}
	if r, err := h.op.Decide(ctx, h.approval(opID), approverID, true); err != nil || r.Status != action.StatusSucceeded {
		t.Fatalf("after retry = %+v, %v", r, err)
	}
	if got := strings.Join(texts(h.sender.Sent()), ""); got != "abbc" {
		t.Errorf("sends = %s, want a, b (unknown), b again after not_delivered, c", got)
	}
}

func TestPartResolvedDeliveredSendsOnlyTheRest(t *testing.T) {
	t.Parallel()
	h := newHarness(t, nil, unknown, nil)
	ctx := context.Background()
	_, opID := h.send("222", long)
	h.op.Decide(ctx, h.approval(opID), approverID, true)
	r, err := h.op.Resolve(ctx, opID, true, "tester")
	if err != nil || h.state(opID) != journal.NotDelivered {
		t.Fatalf("Resolve delivered with a part left = %+v, %v, state %s; want not_delivered", r, err, h.state(opID))
	}
	h.op.Retry(ctx, opID)
	h.op.Decide(ctx, h.approval(opID), approverID, true)
	if got := strings.Join(texts(h.sender.Sent()), ""); got != "abc" {
		t.Errorf("sends = %s, want a, b (unknown, then resolved delivered), c", got)
	}
}
