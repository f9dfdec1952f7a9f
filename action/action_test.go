package action_test

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"testing"

	"github.com/countersign/countersign/action"
	"github.com/countersign/countersign/internal/depstest"
)

func TestPayloadHashBindsEveryField(t *testing.T) {
	base := action.Payload{Action: "send_message", Target: "1", Text: "x"}
	for _, changed := range []action.Payload{
		{Action: "publish_post", Target: "1", Text: "x"},
		{Action: "send_message", Target: "2", Text: "x"},
		{Action: "send_message", Target: "1", Text: "x "},
		{Action: "send_message", Target: "1", Text: "x", ParseMode: "HTML"},
		{Action: "send_message", Target: "1", Text: "x", Parts: []string{"x", "and a part nobody approved"}},
		{Action: "send_message", Target: "1", Text: "x", MessageID: 7},
		{Action: "send_message", Target: "1", Text: "x", Before: "what the card said it reads now"},
	} {
		if changed.SHA256() == base.SHA256() {
			t.Errorf("%+v hashes like %+v", changed, base)
		}
	}
}

// TestAPayloadWithoutTheNewFieldsHashesAsBefore: approvals journaled before a
// payload could name a message bind to the hash of the JSON they had, which the
// fields added since leave alone when empty.
func TestAPayloadWithoutTheNewFieldsHashesAsBefore(t *testing.T) {
	p := action.Payload{Action: "send_message", Target: "222", Text: "hello"}
	sum := sha256.Sum256([]byte(`{"action":"send_message","target":"222","text":"hello"}`))
	if got, want := p.SHA256(), hex.EncodeToString(sum[:]); got != want {
		t.Errorf("SHA256 = %s, want %s, the hash of the JSON stored before", got, want)
	}
}

// TestAFenceThatCannotProveTheHoldingFences: a fence's own error (the journal
// out of reach) is not a holding, so the sender reads it as ErrFenced; no fence
// at all is a context that needs none.
func TestAFenceThatCannotProveTheHoldingFences(t *testing.T) {
	if err := action.CheckFence(context.Background()); err != nil {
		t.Errorf("no fence: %v, want nil", err)
	}
	unreachable := errors.New("journal out of reach")
	tests := []struct {
		name  string
		fence action.Fence
		want  []error
	}{
		{"holds", func(context.Context) error { return nil }, nil},
		{"fenced", func(context.Context) error { return action.ErrFenced }, []error{action.ErrFenced}},
		{"cannot tell", func(context.Context) error { return unreachable }, []error{action.ErrFenced, unreachable}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			err := action.CheckFence(action.WithFence(context.Background(), tt.fence))
			if (err == nil) != (tt.want == nil) {
				t.Fatalf("CheckFence = %v, want errors %v", err, tt.want)
			}
			for _, w := range tt.want {
				if !errors.Is(err, w) {
					t.Errorf("CheckFence = %v, want it to wrap %v", err, w)
				}
			}
		})
	}
}

// TestAFixKeepsWhatWasApproved: a repair by schema changes how the payload is
// delivered, never what it says.
func TestAFixKeepsWhatWasApproved(t *testing.T) {
	p := action.Payload{Action: action.SendMessage, Target: "-100", Text: "<b>hi</b>", ParseMode: "HTML"}
	got := action.Fix{Target: "-1001", PlainText: true}.Apply(p)
	want := action.Payload{Action: action.SendMessage, Target: "-1001", Text: "<b>hi</b>"}
	if got.SHA256() != want.SHA256() {
		t.Errorf("Apply = %+v, want %+v", got, want)
	}
	if same := (action.Fix{}).Apply(p); same.SHA256() != p.SHA256() {
		t.Errorf("an empty fix changed the payload: %+v", same)
	}
}

// TestTheContractIsALeaf: every package of ours may name a payload or a
// result, so the contract itself imports none of them.
func TestTheContractIsALeaf(t *testing.T) {
	t.Parallel()
	for _, dep := range depstest.Deps(t, depstest.Module+"/action") {
		if depstest.Ours(dep) && dep != depstest.Module+"/action" {
			t.Errorf("action depends on %s", dep)
		}
	}
}
