package command_test

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/countersign/countersign/action"
	"github.com/countersign/countersign/command"
	"github.com/countersign/countersign/journal"
	"github.com/countersign/countersign/policy"
	"github.com/countersign/countersign/stepup"
)

// TestAStepUpTapAsksACodeAndTheCodeApproves: a tap on Approve of a request
// that asks a code records nothing, sends nothing, and comes back as a prompt
// naming the operation, the approval and the payload hash; a wrong code
// through Confirm is refused in words; the right code through /code (an
// approver who is no operator) approves and sends once, and the reply says
// so; the same approval confirmed again is decided already.
func TestAStepUpTapAsksACodeAndTheCodeApproves(t *testing.T) {
	ctx := context.Background()
	w := newWorld(t)
	p := testPolicy(t, approverID)
	tp := p.Tools["commit_send_message"]
	tp.StepUp = policy.FactorTOTP
	p.Tools["commit_send_message"] = tp
	h := w.start(p, "telegram")
	secret, _ := stepup.NewSecret()
	if err := w.j.EnrolTOTP(ctx, approverID, secret, false); err != nil {
		t.Fatal(err)
	}
	r, err := h.Handle(ctx, command.Request{User: operatorID, Chat: "1", Line: "/send 222 hello"})
	if err != nil || r.Result == nil || r.Result.Status != action.StatusPending {
		t.Fatalf("/send = %+v, %v; want pending", r, err)
	}
	a, err := h.Approval(ctx, r.Result.OperationID)
	if err != nil {
		t.Fatal(err)
	}
	var answers []string
	got, err := h.Tap(ctx, command.Tap{User: approverID, Name: "@ann (2)", Button: command.Approve, Ref: a.ID, Answer: func(s string) { answers = append(answers, s) }})
	if err != nil || got.StepUp == nil || got.Result != nil || got.Close != "" {
		t.Fatalf("tap = %+v, %v; want a code prompt and nothing decided", got, err)
	}
	if len(answers) != 1 || !strings.HasPrefix(answers[0], "Nothing is recorded yet: send your TOTP code") {
		t.Errorf("answers = %q", answers)
	}
	for _, want := range []string{a.ID, a.OperationID, a.PayloadSHA256, "TOTP"} {
		if !strings.Contains(got.StepUp.Text, want) {
			t.Errorf("prompt %q: want it to name %q", got.StepUp.Text, want)
		}
	}
	if got.StepUp.Factor != policy.FactorTOTP || got.StepUp.Approval.ID != a.ID {
		t.Errorf("prompt = %+v", got.StepUp)
	}
	if w.sender.count() != 0 {
		t.Fatal("a tap alone sent")
	}
	code, _ := stepup.Code(secret, time.Now())
	wrong := "000000"
	if code == wrong {
		wrong = "000001"
	}
	c, err := h.Confirm(ctx, command.Confirmation{User: approverID, Approval: a.ID, Code: wrong})
	if err != nil || !strings.HasPrefix(c.Text, "Refused: wrong code (1 of 5 in a row") || c.Result != nil {
		t.Fatalf("a wrong code = %+v, %v; want refused in words", c, err)
	}
	if _, err := h.Handle(ctx, command.Request{User: operatorID, Chat: "1", Line: "/code " + a.ID}); !errors.Is(err, command.ErrUsage) {
		t.Errorf("/code without a code = %v, want a usage error", err)
	}
	rep, err := h.Handle(ctx, command.Request{User: approverID, Chat: "2", Line: "/code " + a.OperationID + " " + code})
	if err != nil || rep.Result == nil || rep.Result.Status != action.StatusSucceeded || !strings.HasPrefix(rep.Text, "Approved with your code. Sending…\n✅ Approved by 2 at ") {
		t.Fatalf("/code = %+v, %v; want sent, and the reply saying so", rep, err)
	}
	if n := w.sender.count(); n != 1 {
		t.Fatalf("sends = %d, want 1", n)
	}
	c, err = h.Confirm(ctx, command.Confirmation{User: approverID, Approval: a.ID, Code: code})
	if err != nil || c.Text != "Already approved." {
		t.Errorf("a second confirmation = %+v, %v; want decided already", c, err)
	}
}

// TestAPromptAsksTheFactorThePolicyAsksNow: an approval made when no factor
// was asked, decided once the process runs under a policy that asks a
// passkey, records nothing, and both a tap on Approve and Decide (the
// console's y) come back asking the passkey, the factor of the operator's
// refusal, never a code guessed from the approval.
func TestAPromptAsksTheFactorThePolicyAsksNow(t *testing.T) {
	ctx := context.Background()
	w := newWorld(t)
	h := w.start(testPolicy(t, approverID), "telegram")
	r, err := h.Handle(ctx, command.Request{User: operatorID, Chat: "1", Line: "/send 222 hello"})
	if err != nil || r.Result == nil || r.Result.Status != action.StatusPending {
		t.Fatalf("/send = %+v, %v; want pending", r, err)
	}
	a, err := h.Approval(ctx, r.Result.OperationID)
	if err != nil || a.StepUp != policy.NoFactor {
		t.Fatalf("approval %+v, %v; want one asking no factor", a, err)
	}
	p := testPolicy(t, approverID)
	tp := p.Tools["commit_send_message"]
	tp.StepUp = policy.FactorPasskey
	p.Tools["commit_send_message"] = tp
	h = w.start(p, "telegram")

	var answers []string
	got, err := h.Tap(ctx, command.Tap{User: approverID, Button: command.Approve, Ref: a.ID, Answer: func(s string) { answers = append(answers, s) }})
	if err != nil || got.StepUp == nil || got.StepUp.Factor != policy.FactorPasskey || got.Result != nil {
		t.Fatalf("tap = %+v, %v; want a passkey's prompt and nothing decided", got, err)
	}
	if len(answers) != 1 || !strings.Contains(answers[0], "approve with your passkey") || !strings.Contains(got.StepUp.Text, "asks your passkey") {
		t.Errorf("answers %q, prompt %q: want the passkey asked", answers, got.StepUp.Text)
	}
	d, err := h.Decide(ctx, a.ID, approverID, true)
	if err != nil || d.StepUp == nil || d.StepUp.Factor != policy.FactorPasskey || !strings.Contains(d.Text, "confirm it with your passkey") {
		t.Fatalf("Decide = %+v, %v; want refused, asking the passkey", d, err)
	}
	if now, _ := w.j.Approval(ctx, a.ID); now.Decision != journal.Pending || len(now.Votes) != 0 || w.sender.count() != 0 {
		t.Errorf("after the tap and Decide: %+v, %d sends; want nothing recorded or sent", now, w.sender.count())
	}
}
