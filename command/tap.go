package command

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/countersign/countersign/action"
	"github.com/countersign/countersign/journal"
	"github.com/countersign/countersign/operator"
	"github.com/countersign/countersign/policy"
)

// Button is what a button of a card asks for.
type Button int

const (
	Approve    Button = iota + 1 // an approval's ✅: approve it and commit
	Reject                       // an approval's ❌: reject it, nothing is sent
	Edit                         // an approval's ✏️: ask for its new text (then /amend)
	Arrived                      // an unknown outcome's "It arrived"
	Lost                         // an unknown outcome's "It did not arrive"
	OfferGrant                   // a task's "Approve all…": show the list a grant approves
	Grant                        // a grant card's "Approve these": approve the list it showed
)

// A Tap is a person's tap on a button of a card. It goes through the handler
// like a command line, so that a surface holds the handler alone: who may
// decide, what is recorded and the words for it are the handler's.
type Tap struct {
	User policy.UserID
	// Name is how the cards name who tapped (a Telegram @username and id): the
	// journal keeps the user id alone.
	Name   string
	Button Button
	// Ref is what the card is about: an approval (Approve, Reject, Edit), an
	// operation (Arrived, Lost) or a task (OfferGrant, Grant).
	Ref string
	// Code is the digest of the list a grant card showed (Grant).
	Code string
	// Answer is called once, as soon as the tap is recorded or refused and
	// before the work it starts (a commit) runs, with the words to answer the
	// tap with; the person is not kept waiting for the send. It must not block.
	Answer func(string)
}

// TapReply is what a tap came to, beyond its answer.
type TapReply struct {
	// Text is what to tell the person who tapped, in their own chat; "" for
	// nothing more than the answer.
	Text string
	// Result is the outcome of what the tap decided (Approve, Reject, Arrived,
	// Lost); nil when nothing was decided.
	Result *action.Result
	// Close is the line every card about Ref now ends with, its buttons gone;
	// "" leaves the cards as they are.
	Close string
	// Amend (Edit) asks the surface to have the person send the approval's
	// new text, for /amend.
	Amend bool
	// Offer (OfferGrant) is the list one grant would approve, for its card.
	Offer *operator.TaskGrant
	// StepUp (Approve, or a code through Confirm) asks the person for the
	// second factor the operator refused the approval without: nothing was
	// recorded; their code comes back through Confirm, their passkey
	// through the review page.
	StepUp *CodePrompt
}

// Tap carries out a tap: it calls tap.Answer once, always, and returns what
// the tap came to. An error is one the person cannot act on (the journal failed);
// refusals are answers.
func (h *Handler) Tap(ctx context.Context, tap Tap) (TapReply, error) {
	answered := false
	answer := func(text string) {
		if !answered && tap.Answer != nil {
			answered = true
			tap.Answer(text)
		}
	}
	defer answer("")
	switch tap.Button {
	case Approve, Reject:
		return h.decideTap(ctx, tap, answer)
	case Edit:
		return h.editTap(ctx, tap, answer)
	case Arrived, Lost:
		return h.resolveTap(ctx, tap, answer)
	case OfferGrant:
		return h.offerTap(ctx, tap, answer)
	case Grant:
		answer("Approving…")
		r, err := h.GrantTask(ctx, tap.User, tap.Ref, tap.Code)
		return TapReply{Text: r.Text}, err
	}
	answer("This button is not known to this bot.")
	return TapReply{}, nil
}

// decideTap records an approver's tap, answers it with what was recorded, and
// only then commits: the answer never promises a send that will not happen.
// Who may decide is the task's snapshot of the approvers, not today's list.
func (h *Handler) decideTap(ctx context.Context, tap Tap, answer func(string)) (TapReply, error) {
	approve := tap.Button == Approve
	d, err := h.Operator.Record(ctx, tap.Ref, tap.User, approve)
	var refused *operator.Refusal
	var missing *journal.StepUpError
	switch {
	case errors.As(err, &missing):
		p, err := h.codePrompt(ctx, d.Approval, missing.Asked)
		if err != nil {
			answer("The bot could not read this approval; nothing was recorded.")
			return TapReply{}, err
		}
		if p.Factor == policy.FactorPasskey {
			answer("Nothing is recorded yet: approve with your passkey, in your phone's browser.")
		} else {
			answer(fmt.Sprintf("Nothing is recorded yet: send your %s code to approve.", p.Factor.Name()))
		}
		return TapReply{StepUp: p}, nil
	case errors.As(err, &refused):
		answer(tapRefusal(refused, d))
		return TapReply{}, nil
	case err != nil:
		answer("The bot could not record this tap; nothing was sent.")
		return TapReply{}, err
	case d.Waiting(): // a quorum's approval: the Voted event notes it on the cards
		answer("Approved: " + operator.QuorumLine(d.Approval) + ".")
		return TapReply{}, nil
	}
	answer(tapAnswer(d))
	r, err := h.Operator.Proceed(ctx, d)
	if err != nil {
		return TapReply{}, err
	}
	return TapReply{Result: &r, Close: decisionLine(r, tap.Name, approve)}, nil
}

// tapAnswer is what a recorded tap is answered with.
func tapAnswer(d operator.Decision) string {
	switch {
	case d.Result.Cause == action.CauseApprovalExpired:
		return "This approval expired; nothing will be sent."
	case d.Approved():
		return "Approved. Sending…"
	}
	return "Rejected. Nothing will be sent."
}

// tapRefusal is what a tap the operator refused is answered with.
func tapRefusal(r *operator.Refusal, d operator.Decision) string {
	switch {
	case errors.Is(r, operator.ErrNotApprover):
		return "You are not an approver of this request (its approvers were fixed when it was made)."
	case errors.Is(r, operator.ErrVoted):
		return "You approved this already: " + operator.QuorumLine(d.Approval) + "."
	case errors.Is(r, operator.ErrDecided):
		return fmt.Sprintf("Already %s.", d.Approval.Decision)
	case errors.Is(r, operator.ErrNoSuchApproval):
		return "This approval is not known."
	case errors.Is(r, operator.ErrSelfApproval):
		return "You asked for this, and this bot's policy has another approver approve it (self_approval: false). You may still reject it."
	}
	return "Refused: " + r.Words + "."
}

// decisionLine is what every copy of a card says once a tap decided it.
func decisionLine(r action.Result, by string, approve bool) string {
	at := time.Now().UTC().Format("2006-01-02 15:04 UTC")
	switch {
	case r.Cause == action.CauseApprovalExpired:
		return "⌛ Expired: nothing was sent."
	case !approve:
		return fmt.Sprintf("❌ Rejected by %s at %s. Nothing was sent.", by, at)
	}
	return fmt.Sprintf("✅ Approved by %s at %s.\n%s", by, at, Describe(r))
}

// editTap checks that the approval still waits and that who tapped may change
// it; the new text comes later, as /amend.
func (h *Handler) editTap(ctx context.Context, tap Tap, answer func(string)) (TapReply, error) {
	a, err := h.Journal.Approval(ctx, tap.Ref)
	switch {
	case err != nil:
		answer("This approval is not known.")
	case a.Decision != journal.Pending:
		answer(fmt.Sprintf("Already %s.", a.Decision))
	case !h.mayApproveHere(tap.User):
		answer("You are not an approver of this request.")
	default:
		answer("Send the new text as a reply.")
		return TapReply{Amend: true}, nil
	}
	return TapReply{}, nil
}

// resolveTap records whether an unknown outcome arrived, as /resolve does.
func (h *Handler) resolveTap(ctx context.Context, tap Tap, answer func(string)) (TapReply, error) {
	if !h.Policy.Access.IsOperator(tap.User) && !h.Policy.Access.IsApprover(tap.User) {
		answer("Only operators can resolve.")
		return TapReply{}, nil
	}
	r, err := h.Operator.Resolve(ctx, tap.Ref, tap.Button == Arrived, tap.Name)
	if err != nil {
		answer("Not resolved: it is no longer unknown.")
		return TapReply{}, nil
	}
	answer("Recorded.")
	return TapReply{Result: &r, Close: "Resolved: " + Describe(r)}, nil
}

// offerTap reads the list of what a task waits on that one grant would approve.
func (h *Handler) offerTap(ctx context.Context, tap Tap, answer func(string)) (TapReply, error) {
	tg, err := h.Operator.OfferTask(ctx, tap.User, tap.Ref)
	var refused *operator.Refusal
	switch {
	case errors.As(err, &refused):
		answer("Refused: " + refused.Words + ".")
		return TapReply{}, nil
	case err != nil:
		answer("The list could not be read; nothing was approved.")
		return TapReply{}, err
	case len(tg.Items) == 0:
		answer("Nothing of this task waits for approval now.")
		return TapReply{}, nil
	}
	answer("")
	return TapReply{Offer: &tg}, nil
}
