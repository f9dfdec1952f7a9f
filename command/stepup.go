package command

import (
	"context"
	"errors"
	"fmt"

	"github.com/countersign/countersign/audit"
	"github.com/countersign/countersign/journal"
	"github.com/countersign/countersign/operator"
	"github.com/countersign/countersign/policy"
)

// A second factor (policy step_up): a tap on Approve of an approval that asks
// one records nothing and comes back as a CodePrompt, which a surface puts to
// the approver its own way (a reply in chat, a prompt in a terminal, a field
// on the review page); the code comes back through Confirm, the one call
// every surface approves with a code through.

// CodePrompt asks an approver for the second factor of an approval, naming
// what they are about to approve: the operation, the approval and the hash
// of the payload the code will be bound to.
type CodePrompt struct {
	Approval  journal.Approval
	Operation journal.Operation
	Factor    policy.Factor
	// Text is the question in words, for a surface that shows it as it is.
	Text string
}

// Confirmation is an approver's code for one approval.
type Confirmation struct {
	User policy.UserID
	// Name is how cards name who confirmed (see Tap.Name).
	Name string
	// Approval is the approval's id, or its operation's (the approval it
	// waits on).
	Approval string
	// Code is the code from the approver's authenticator app.
	Code string
	// Receipt, instead of a code, is the approver's passkey assertion of the
	// approval, checked by the surface that took it (the review page).
	Receipt *audit.PasskeyReceipt
	// Answer, when set, is called once with the words that answer the code,
	// before the commit it starts runs; without it they are the reply's Text.
	Answer func(string)
}

// Confirm records c's code as its approver's approval of c.Approval, as a tap
// on Approve with the code would (operator.Confirm), and commits what it
// approved. Refusals (a wrong, used or malformed code, a locked factor, no
// factor enrolled, not an approver, decided already) are answers, and
// record nothing but the count of wrong codes; an error is one the person
// cannot act on. A code where the operator asks a stronger factor now is
// refused too, and the reply's StepUp asks for that one.
func (h *Handler) Confirm(ctx context.Context, c Confirmation) (TapReply, error) {
	reply := TapReply{}
	answered := false
	answer := func(text string) {
		if answered {
			return
		}
		answered = true
		if c.Answer != nil {
			c.Answer(text)
			return
		}
		reply.Text = text
	}
	id, err := h.Operator.ApprovalID(ctx, c.Approval)
	if err != nil {
		answer(fmt.Sprintf("%s waits on no approval.", c.Approval))
		return reply, nil
	}
	what := "your code"
	var d operator.Decision
	if c.Receipt != nil {
		what = "your passkey"
		d, err = h.Operator.ConfirmPasskey(ctx, id, c.User, *c.Receipt)
	} else {
		d, err = h.Operator.Confirm(ctx, id, c.User, c.Code)
	}
	var refused *operator.Refusal
	var missing *journal.StepUpError
	switch {
	case errors.As(err, &refused):
		answer(tapRefusal(refused, d))
		if !errors.As(err, &missing) {
			return reply, nil
		}
		// A code where the operator asks more now (a passkey, since the
		// policy changed): the person is asked for what it asks.
		reply.StepUp, err = h.codePrompt(ctx, d.Approval, missing.Asked)
		return reply, err
	case err != nil:
		answer("The bot could not record " + what + "; nothing was sent.")
		return reply, err
	case d.Waiting():
		answer("Approved with " + what + ": " + operator.QuorumLine(d.Approval) + ".")
		return reply, nil
	case d.Approved():
		answer("Approved with " + what + ". Sending…")
	default:
		answer(tapAnswer(d))
	}
	r, err := h.Operator.Proceed(ctx, d)
	if err != nil {
		return reply, err
	}
	reply.Result, reply.Close = &r, decisionLine(r, nameOr(c.Name, c.User), true)
	return reply, nil
}

// nameOr is name, or the user's id when a surface gave no name.
func nameOr(name string, user policy.UserID) string {
	if name != "" {
		return name
	}
	return fmt.Sprint(user)
}

// codePrompt is the question a tap on Approve of approval a brings when the
// operator refused it without second factor f (journal.StepUpError.Asked):
// f, never the factor a asked when it was made, since a policy may ask
// another since.
func (h *Handler) codePrompt(ctx context.Context, a journal.Approval, f policy.Factor) (*CodePrompt, error) {
	op, err := h.Journal.Operation(ctx, a.OperationID)
	if err != nil {
		return nil, err
	}
	if f == policy.FactorPasskey {
		return &CodePrompt{Approval: a, Operation: op, Factor: f, Text: fmt.Sprintf(
			"Approval %s of %s (%s to %s) asks your passkey beside the tap. Its challenge is bound to payload sha256 %s. "+
				"Passkeys do not work inside Telegram: open the review page in your phone's browser and approve there with your passkey.",
			a.ID, op.ID, op.Payload.Action, op.Payload.Target, a.PayloadSHA256)}, nil
	}
	return &CodePrompt{Approval: a, Operation: op, Factor: f, Text: fmt.Sprintf(
		"Approval %s of %s (%s to %s) asks your %s code beside the tap. It is bound to payload sha256 %s. "+
			"Reply with the %s code from your authenticator app (or /code %s <code>).",
		a.ID, op.ID, op.Payload.Action, op.Payload.Target, f.Name(), a.PayloadSHA256, f.Name(), a.ID)}, nil
}
