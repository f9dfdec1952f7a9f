package operator

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/countersign/countersign/audit"
	"github.com/countersign/countersign/journal"
	"github.com/countersign/countersign/policy"
	"github.com/countersign/countersign/stepup"
)

// A second factor bound to the payload (policy step_up). Where the approval,
// the task's snapshot or the policy in force here asks one, a tap on Approve
// records nothing: the refusal unwraps to a *journal.StepUpError naming the
// factor, and the approver confirms with a code from the app they enrolled
// on the machine (Confirm) or with their passkey (ConfirmPasskey). The
// operator decides the factor (stepUp) and hands it to the journal with the
// ballot; the journal alone checks it, in the transaction that records the
// vote with its factor and the code's step (journal.DecideBallot). The
// sender counts only votes given with the factor its own policy asks
// (approvedEnough), so no auto_approve rule, grant, or approval given before
// step_up was set stands in for it.

// Refusals of a second factor, beside those of Record.
var (
	// ErrNoFactor refuses a code from an approver with no factor enrolled.
	ErrNoFactor = errors.New("no second factor enrolled")
	// ErrCodeRefused refuses a code wrong, used already or malformed; it
	// counts toward the lockout.
	ErrCodeRefused = errors.New("code refused")
	// ErrStepUpLocked refuses a code while wrong codes in a row lock the
	// approver's factor (stepup.MaxWrong, for stepup.LockFor).
	ErrStepUpLocked = errors.New("second factor locked")
	// ErrPasskeyRefused refuses a passkey assertion that does not prove this
	// approval by this approver, or whose counter did not move on.
	ErrPasskeyRefused = errors.New("passkey assertion refused")
)

// Lock is an approver's second factor locked by wrong codes in a row.
type Lock struct {
	User  policy.UserID
	Until time.Time
}

// Confirm records approver by's approval of approvalID with code, a TOTP code
// from the app they enrolled: a tap plus the code, for an approval that asks
// a second factor (a code on one that asks none is checked all the same).
// Its refusals are Record's, ErrNoFactor, ErrCodeRefused and
// ErrStepUpLocked; the stepup.MaxWrong-th wrong code in a row locks the
// factor and publishes StepUpLocked. A vote already given is ErrVoted, and
// spends no code. Proceed commits what it approved.
func (o *Operator) Confirm(ctx context.Context, approvalID string, by policy.UserID, code string) (Decision, error) {
	if code == "" {
		return Decision{}, refusal(ErrCodeRefused, "no code given: %v", stepup.ErrMalformed)
	}
	return o.ballot(ctx, approvalID, by, true, journal.Ballot{Code: code})
}

// ConfirmPasskey records approver by's approval of approvalID with r, the
// receipt of a passkey assertion that the surface which took it checked
// (passkey.RP.FinishApproval) and the journal checks again with the stored
// key in the transaction that records the vote. Its refusals are Record's,
// ErrPasskeyRefused (another approval, payload, approver or key; a replayed
// or cloned counter) and ErrNoFactor (no such passkey of by's). Proceed
// commits what it approved.
func (o *Operator) ConfirmPasskey(ctx context.Context, approvalID string, by policy.UserID, r audit.PasskeyReceipt) (Decision, error) {
	return o.ballot(ctx, approvalID, by, true, journal.Ballot{Receipt: &r})
}

// StepUpLine says which second factor an approval waits for, for a
// requester and a card: "each approver confirms with a TOTP code", or with
// their passkey.
func StepUpLine(f policy.Factor) string {
	if f == policy.FactorPasskey {
		return "each approver confirms with their passkey, on the review page in a browser (step_up)"
	}
	return fmt.Sprintf("each approver confirms with a %s code (step_up)", f.Name())
}

// stepUpWords says that opID asks factor beside the tap, and how to give it:
// the words of a refusal that unwraps to a *journal.StepUpError.
func stepUpWords(opID string, factor policy.Factor) string {
	if factor == policy.FactorPasskey {
		return fmt.Sprintf("%s asks a second factor (passkey) beside the tap: confirm it with your passkey, on the review page in a browser", opID)
	}
	return fmt.Sprintf("%s asks a second factor (%s) beside the tap: confirm it with your %s code", opID, factor, factor.Name())
}

// codeRefused turns the journal's refusal of by's second factor on approval a
// into a refusal in words, and publishes StepUpLocked when this code locked the
// factor. ok is false when err is no such refusal: this is the one list of them.
func (o *Operator) codeRefused(ctx context.Context, op journal.Operation, a journal.Approval, by policy.UserID, err error) (refused error, ok bool) {
	var ce *journal.CodeError
	var missing *journal.StepUpError
	switch {
	case errors.As(err, &missing):
		return &Refusal{Err: missing, Words: stepUpWords(op.ID, missing.Asked)}, true
	case errors.Is(err, journal.ErrNoPasskey):
		return refusal(ErrNoFactor, "user %d has no such passkey: enrol on the machine with `countersign approver passkey %d`", by, by), true
	case errors.Is(err, journal.ErrPasskeyCounter):
		return refusal(ErrPasskeyRefused, "this passkey's signature counter did not move on: a replayed assertion or a cloned authenticator; nothing was recorded"), true
	case errors.Is(err, journal.ErrPasskeyRefused):
		return refusal(ErrPasskeyRefused, "the passkey assertion does not prove approval %s of payload %s by %d; nothing was recorded", a.ID, a.PayloadSHA256, by), true
	case errors.Is(err, journal.ErrNoFactor):
		return refusal(ErrNoFactor, "user %d has no TOTP factor: enrol on the machine with `countersign approver totp %d`", by, by), true
	case !errors.As(err, &ce):
		return nil, false
	case ce.Locked:
		o.opts.Logger.Warn("second factor locked: wrong codes in a row", "user", by, "approval", a.ID, "until", ce.LockedUntil)
		o.publish(Event{Kind: StepUpLocked, Operation: o.current(ctx, op.ID), Approval: &a, Lock: &Lock{User: by, Until: ce.LockedUntil},
			Late: isLate(ctx), Request: requestOf(ctx)})
		return refusal(ErrStepUpLocked, "%d wrong codes in a row: the second factor of %d is locked until %s, and the other approvers are told",
			ce.Wrong, by, ce.LockedUntil.UTC().Format("15:04 UTC")), true
	case errors.Is(err, journal.ErrFactorLocked):
		return refusal(ErrStepUpLocked, "the second factor of %d is locked until %s after wrong codes in a row", by, ce.LockedUntil.UTC().Format("15:04 UTC")), true
	case errors.Is(err, stepup.ErrReused):
		return refusal(ErrCodeRefused, "this code was used already; wait for the next one (%d of %d refused in a row)", ce.Wrong, stepup.MaxWrong), true
	case errors.Is(err, stepup.ErrMalformed):
		return refusal(ErrCodeRefused, "a code is %d digits (%d of %d refused in a row)", stepup.Digits, ce.Wrong, stepup.MaxWrong), true
	}
	return refusal(ErrCodeRefused, "wrong code (%d of %d in a row; the %dth locks it for %s)", ce.Wrong, stepup.MaxWrong, stepup.MaxWrong, stepup.LockFor), true
}
