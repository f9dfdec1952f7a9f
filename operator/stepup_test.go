package operator_test

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/countersign/countersign/action"
	"github.com/countersign/countersign/internal/passkeytest"
	"github.com/countersign/countersign/journal"
	"github.com/countersign/countersign/operator"
	"github.com/countersign/countersign/policy"
	"github.com/countersign/countersign/stepup"
)

// stepUpOn asks a TOTP code of every approver of commit_send_message, and
// enrols approverID; it returns their secret.
func stepUpOn(h *harness) string {
	h.t.Helper()
	tp := h.pol.Tools["commit_send_message"]
	tp.StepUp = policy.FactorTOTP
	h.pol.Tools["commit_send_message"] = tp
	h.open()
	return h.enrol(approverID)
}

// enrol enrols user with a fresh TOTP secret, as `countersign approver totp`
// does, and returns it.
func (h *harness) enrol(user policy.UserID) string {
	h.t.Helper()
	secret, err := stepup.NewSecret()
	if err != nil {
		h.t.Fatal(err)
	}
	if err := h.j.EnrolTOTP(context.Background(), user, secret, false); err != nil {
		h.t.Fatal(err)
	}
	return secret
}

// code is secret's code now, on the harness's clock.
func (h *harness) code(secret string) string {
	h.t.Helper()
	c, err := stepup.Code(secret, h.clock.Now())
	if err != nil {
		h.t.Fatal(err)
	}
	return c
}

// refusedFor reports whether err is the operator's refusal of an approval
// for want of factor: a *operator.Refusal that unwraps to a
// *journal.StepUpError asking factor.
func refusedFor(err error, factor policy.Factor) bool {
	var refused *operator.Refusal
	var missing *journal.StepUpError
	return errors.As(err, &refused) && errors.As(err, &missing) && missing.Asked == factor
}

// TestAStepUpApprovalTakesATapAndACode: the call's pending result says a
// code is awaited; a tap alone records nothing (a refusal asking TOTP); a wrong code is
// refused and sends nothing; the right code approves, the commit sends once,
// and the vote keeps the factor; the code again is refused as used.
func TestAStepUpApprovalTakesATapAndACode(t *testing.T) {
	t.Parallel()
	h := newHarness(t)
	secret := stepUpOn(h)
	ctx := context.Background()
	task, err := h.op.StartTask(ctx, journal.Task{Requester: operatorID, Chat: "1"})
	if err != nil {
		t.Fatal(err)
	}
	r, err := h.op.Call(ctx, task.ID, callSend("222", "hello"))
	if err != nil || r.Status != action.StatusPending || !strings.Contains(r.Reason, "TOTP code") {
		t.Fatalf("Call = %+v, %v; want pending, saying a code is awaited", r, err)
	}
	opID := r.OperationID
	apID := h.approval(opID)
	if a := h.latestApproval(opID); a.StepUp != policy.FactorTOTP {
		t.Fatalf("approval asks %q, want totp", a.StepUp)
	}
	op, _ := h.j.Operation(ctx, opID)
	if reason := h.op.WaitingReason(ctx, op); !strings.Contains(reason, "TOTP code") {
		t.Errorf("waiting reason %q: want it to say a code is awaited", reason)
	}
	if _, err := h.op.Record(ctx, apID, approverID, true); !refusedFor(err, policy.FactorTOTP) {
		t.Fatalf("a tap alone = %v, want it refused for want of a TOTP code", err)
	}
	if a := h.latestApproval(opID); a.Decision != journal.Pending || len(a.Votes) != 0 {
		t.Fatalf("after a tap alone: %+v, want nothing recorded", a)
	}
	wrong := "000000"
	if h.code(secret) == wrong {
		wrong = "000001"
	}
	if _, err := h.op.Confirm(ctx, apID, approverID, wrong); !errors.Is(err, operator.ErrCodeRefused) {
		t.Fatalf("a wrong code = %v, want ErrCodeRefused", err)
	}
	if _, err := h.op.Confirm(ctx, apID, strangerID, h.code(secret)); !errors.Is(err, operator.ErrNotApprover) {
		t.Fatalf("a stranger with the code = %v, want ErrNotApprover", err)
	}
	if _, err := h.op.Confirm(ctx, apID, operatorID, h.code(secret)); !errors.Is(err, operator.ErrNoFactor) {
		t.Fatalf("an approver without a factor = %v, want ErrNoFactor", err)
	}
	if len(h.sender.Sent()) != 0 {
		t.Fatal("sent before a right code")
	}
	code := h.code(secret)
	d, err := h.op.Confirm(ctx, apID, approverID, code)
	if err != nil || !d.Approved() {
		t.Fatalf("Confirm = %+v, %v; want approved", d, err)
	}
	if r, err := h.op.Proceed(ctx, d); err != nil || r.Status != action.StatusSucceeded {
		t.Fatalf("Proceed = %+v, %v; want sent", r, err)
	}
	if n := len(h.sender.Sent()); n != 1 {
		t.Fatalf("sends = %d, want 1", n)
	}
	if a := h.latestApproval(opID); len(a.Votes) != 1 || a.Votes[0].StepUp != policy.FactorTOTP || a.Votes[0].By != approverID {
		t.Errorf("votes = %+v, want one given with totp", a.Votes)
	}
	r, _ = h.op.Call(ctx, task.ID, callSend("222", "again"))
	if _, err := h.op.Confirm(ctx, h.approval(r.OperationID), approverID, code); !errors.Is(err, operator.ErrCodeRefused) || !strings.Contains(err.Error(), "used already") {
		t.Fatalf("the same code on another approval = %v, want it refused as used already", err)
	}
	if a := h.latestApproval(r.OperationID); a.Decision != journal.Pending || len(a.Votes) != 0 || len(h.sender.Sent()) != 1 {
		t.Errorf("after the used code: %+v, %d sends; want the approval untouched and one send", a, len(h.sender.Sent()))
	}
}

// TestNoAutoApproveWaivesStepUp: an auto_approve rule covering the chat asks
// a code all the same.
func TestNoAutoApproveWaivesStepUp(t *testing.T) {
	t.Parallel()
	h := newHarness(t)
	h.pol.AutoApprove = []policy.AutoApprove{policyRule("commit_send_message", "222")}
	stepUpOn(h)
	_, opID := h.send("222", "hello") // fails inside send unless pending
	if len(h.sender.Sent()) != 0 || h.latestApproval(opID).StepUp != policy.FactorTOTP {
		t.Fatalf("sent %d under an auto_approve rule where a code is asked", len(h.sender.Sent()))
	}
}

// TestAnApprovalWithoutTheSendersFactorIsAskedAgain: an approval given with
// taps alone, before step_up was set (by a process whose policy asked none),
// is not counted by a sender whose policy asks a code, whether one tap or
// the votes of a quorum gave it: the operation goes back to awaiting
// approval with an approval that asks one, and nothing is sent until the
// code.
func TestAnApprovalWithoutTheSendersFactorIsAskedAgain(t *testing.T) {
	t.Parallel()
	for _, quorum := range []int{1, 2} {
		t.Run(fmt.Sprintf("approvals %d", quorum), func(t *testing.T) {
			t.Parallel()
			h := newHarness(t)
			h.pol.Access.Approvers = []policy.UserID{operatorID, approverID, thirdApprover}
			tp := h.pol.Tools["commit_send_message"]
			tp.Approvals = quorum
			h.pol.Tools["commit_send_message"] = tp
			h.open()
			ctx := context.Background()
			_, opID := h.send("222", "hello")
			apID := h.approval(opID)
			for _, by := range []policy.UserID{approverID, thirdApprover}[:quorum] {
				if _, err := h.j.Decide(ctx, apID, journal.DecideApprove, by); err != nil {
					t.Fatal(err)
				}
			}
			if a := h.latestApproval(opID); a.Decision != journal.DecideApprove {
				t.Fatalf("before step_up: %s, want approved", a.Decision)
			}
			secret := stepUpOn(h)
			if err := h.op.Resume(ctx); err != nil {
				t.Fatal(err)
			}
			h.op.Wait()
			if len(h.sender.Sent()) != 0 {
				t.Fatal("sent on an approval without the code the sender's policy asks")
			}
			if rs := reasons(t, h, opID); rs[len(rs)-1] != operator.ReasonAskedAgain {
				t.Fatalf("last reason = %q, want %q", rs[len(rs)-1], operator.ReasonAskedAgain)
			}
			a := h.latestApproval(opID)
			if a.ID == apID || a.StepUp != policy.FactorTOTP {
				t.Fatalf("new approval = %+v, want one asking totp", a)
			}
			if _, err := h.op.Decide(ctx, a.ID, approverID, true); !refusedFor(err, policy.FactorTOTP) {
				t.Fatalf("a tap on the new approval = %v; want it refused for want of a TOTP code", err)
			}
			if quorum > 1 {
				return // the next voter's code is TestAVoteGivenSpendsNoSecondCode's
			}
			d, err := h.op.Confirm(ctx, a.ID, approverID, h.code(secret))
			if err != nil {
				t.Fatal(err)
			}
			if r, err := h.op.Proceed(ctx, d); err != nil || r.Status != action.StatusSucceeded {
				t.Fatalf("Proceed = %+v, %v; want sent", r, err)
			}
		})
	}
}

// TestAFactorAskedSinceTheApprovalIsAskedOfTheTap: an approval made when no
// factor was asked, tapped once the policy in force asks one, records
// nothing: the tap is refused naming the factor the policy asks now (not
// the approval's none), and so is a TOTP code where a passkey is asked,
// which stays unspent; the factor asked approves it, and the commit sends
// once. A surface prompts for the factor the refusal names, so it must be
// the one in force.
func TestAFactorAskedSinceTheApprovalIsAskedOfTheTap(t *testing.T) {
	t.Parallel()
	for _, now := range []policy.Factor{policy.FactorTOTP, policy.FactorPasskey} {
		t.Run(string(now), func(t *testing.T) {
			t.Parallel()
			h := newHarness(t)
			ctx := context.Background()
			_, opID := h.send("222", "asked before step_up")
			a := h.latestApproval(opID)
			if a.StepUp != policy.NoFactor {
				t.Fatalf("approval asks %q, want none", a.StepUp)
			}
			tp := h.pol.Tools["commit_send_message"]
			tp.StepUp = now
			h.pol.Tools["commit_send_message"] = tp
			h.open() // the process again, under a policy that asks a factor now
			secret := h.enrol(approverID)
			signer := passkeytest.New(approverID)
			h.j.NewPasskeyLink(ctx, approverID, "link", h.clock.Now().Add(time.Hour))
			if err := h.j.FinishPasskeyLink(ctx, "link", signer.Credential()); err != nil {
				t.Fatal(err)
			}
			op, _ := h.j.Operation(ctx, opID)
			if reason, want := h.op.WaitingReason(ctx, op), operator.StepUpLine(now); !strings.Contains(reason, want) {
				t.Errorf("waiting reason %q: want it to say %q, the factor asked now", reason, want)
			}
			if _, err := h.op.Record(ctx, a.ID, approverID, true); !refusedFor(err, now) {
				t.Fatalf("a tap alone = %v, want it refused for want of %s", err, now)
			}
			if now == policy.FactorPasskey {
				code := h.code(secret)
				if _, err := h.op.Confirm(ctx, a.ID, approverID, code); !refusedFor(err, policy.FactorPasskey) {
					t.Fatalf("a TOTP code = %v, want it refused for want of a passkey", err)
				}
				if err := h.j.UseTOTP(ctx, approverID, code); err != nil {
					t.Fatalf("the code after its refusal = %v, want it unspent", err)
				}
			}
			if got := h.latestApproval(opID); got.ID != a.ID || got.Decision != journal.Pending || len(got.Votes) != 0 || len(h.sender.Sent()) != 0 {
				t.Fatalf("after the refusals: %+v, %d sends; want the approval untouched, nothing sent", got, len(h.sender.Sent()))
			}
			var d operator.Decision
			var err error
			if now == policy.FactorPasskey {
				d, err = h.op.ConfirmPasskey(ctx, a.ID, approverID, signer.Receipt(a.ID, a.PayloadSHA256))
			} else {
				d, err = h.op.Confirm(ctx, a.ID, approverID, h.code(secret))
			}
			if err != nil || !d.Approved() {
				t.Fatalf("confirmed with %s = %+v, %v; want approved", now, d, err)
			}
			if r, err := h.op.Proceed(ctx, d); err != nil || r.Status != action.StatusSucceeded || len(h.sender.Sent()) != 1 {
				t.Fatalf("Proceed = %+v, %v, %d sends; want sent once", r, err, len(h.sender.Sent()))
			}
			if got := h.latestApproval(opID); got.ID != a.ID || len(got.Votes) != 1 || got.Votes[0].StepUp != now {
				t.Errorf("approval %+v: want the one asked, with one vote given with %s", got, now)
			}
		})
	}
}

// TestGrantsGiveNoSecondFactor: a window grant is refused for a tool that
// asks a code; one made before step_up was set is not used; a task's card
// grant leaves out the approvals that ask a code.
func TestGrantsGiveNoSecondFactor(t *testing.T) {
	t.Parallel()
	h := newHarness(t)
	h.pol.GrantMax = time.Hour
	h.open()
	ctx := context.Background()
	if _, err := h.op.GrantWindow(ctx, approverID, "commit_send_message", "222", time.Hour); err != nil {
		t.Fatal(err)
	}
	stepUpOn(h)
	if _, err := h.op.GrantWindow(ctx, approverID, "commit_send_message", "222", time.Hour); !errors.Is(err, operator.ErrGrant) {
		t.Fatalf("a grant for a step-up tool = %v, want ErrGrant", err)
	}
	taskID, opID := h.send("222", "under an older grant") // fails inside send unless pending
	if len(h.sender.Sent()) != 0 || h.latestApproval(opID).Decision != journal.Pending {
		t.Fatal("an older grant approved a commit that asks a code")
	}
	// Not used at all: an approval the grant gave, which the sender then
	// refuses and asks again, is a use too.
	if rs := reasons(t, h, opID); slices.Contains(rs, operator.ReasonAskedAgain) {
		t.Errorf("reasons %q: the older grant was used, then its approval asked again", rs)
	}
	offer, err := h.op.OfferTask(ctx, approverID, taskID)
	if err != nil || len(offer.Items) != 0 {
		t.Fatalf("offer = %+v, %v; want the step-up approval left out", offer, err)
	}
}

// TestWrongCodesInARowLockAndTellTheApprovers: the fifth wrong, used or
// malformed code in a row locks the approver's factor and publishes
// StepUpLocked once, naming them and the end of the lock; the right code is
// then refused as locked, and nothing is sent.
func TestWrongCodesInARowLockAndTellTheApprovers(t *testing.T) {
	t.Parallel()
	h := newHarness(t)
	secret := stepUpOn(h)
	ctx := context.Background()
	var mu sync.Mutex
	var locks []operator.Event
	defer h.op.Subscribe(func(ev operator.Event) {
		if ev.Kind == operator.StepUpLocked {
			mu.Lock()
			locks = append(locks, ev)
			mu.Unlock()
		}
	})()
	_, opID := h.send("222", "hello")
	apID := h.approval(opID)
	wrong := "000000"
	if h.code(secret) == wrong {
		wrong = "000001"
	}
	for i, code := range []string{wrong, "12345", wrong, "abcdef"} {
		if _, err := h.op.Confirm(ctx, apID, approverID, code); !errors.Is(err, operator.ErrCodeRefused) {
			t.Fatalf("wrong code %d = %v, want ErrCodeRefused", i+1, err)
		}
	}
	_, err := h.op.Confirm(ctx, apID, approverID, wrong)
	if !errors.Is(err, operator.ErrStepUpLocked) {
		t.Fatalf("the fifth wrong code = %v, want ErrStepUpLocked", err)
	}
	mu.Lock()
	got := append([]operator.Event(nil), locks...)
	mu.Unlock()
	if len(got) != 1 || got[0].Lock == nil || got[0].Lock.User != approverID || !got[0].Lock.Until.Equal(h.clock.Now().Add(stepup.LockFor)) ||
		got[0].Approval == nil || got[0].Approval.ID != apID {
		t.Fatalf("StepUpLocked events = %+v, want one naming %d until %s", got, approverID, h.clock.Now().Add(stepup.LockFor))
	}
	if _, err := h.op.Confirm(ctx, apID, approverID, h.code(secret)); !errors.Is(err, operator.ErrStepUpLocked) {
		t.Fatalf("the right code while locked = %v, want ErrStepUpLocked", err)
	}
	if len(h.sender.Sent()) != 0 || h.latestApproval(opID).Decision != journal.Pending {
		t.Fatal("something was approved or sent while locked")
	}
	mu.Lock()
	defer mu.Unlock()
	if len(locks) != 1 {
		t.Errorf("StepUpLocked published %d times, want once", len(locks))
	}
}

// TestAVoteGivenSpendsNoSecondCode: in a quorum of two with step_up, an
// approver who confirmed already and confirms again (a reply replayed) is
// refused with ErrVoted, and their next code stays unused.
func TestAVoteGivenSpendsNoSecondCode(t *testing.T) {
	t.Parallel()
	h := newHarness(t)
	h.pol.Access.Approvers = []policy.UserID{operatorID, approverID, thirdApprover}
	tp := h.pol.Tools["commit_send_message"]
	tp.Approvals = 2
	h.pol.Tools["commit_send_message"] = tp
	secret := stepUpOn(h)
	ctx := context.Background()
	_, opID := h.send("222", "hello")
	apID := h.approval(opID)
	d, err := h.op.Confirm(ctx, apID, approverID, h.code(secret))
	if err != nil || !d.Waiting() {
		t.Fatalf("first confirmation = %+v, %v; want counted, waiting", d, err)
	}
	h.clock.Advance(stepup.Period)
	next := h.code(secret)
	if _, err := h.op.Confirm(ctx, apID, approverID, next); !errors.Is(err, operator.ErrVoted) {
		t.Fatalf("a second confirmation = %v, want ErrVoted", err)
	}
	if err := h.j.UseTOTP(ctx, approverID, next); err != nil {
		t.Fatalf("the next code after the refused vote = %v, want it unspent", err)
	}
}

// TestAPasskeyApprovalTakesItsReceiptOnce: a tool that asks a passkey takes
// no tap alone; a receipt of another payload, or of another approver's
// credential, is refused and sends nothing; the approver's receipt approves
// it, the commit sends once and the vote keeps the factor; the receipt again
// on the next approval is refused.
func TestAPasskeyApprovalTakesItsReceiptOnce(t *testing.T) {
	t.Parallel()
	h := newHarness(t)
	tp := h.pol.Tools["commit_send_message"]
	tp.StepUp = policy.FactorPasskey
	h.pol.Tools["commit_send_message"] = tp
	h.open()
	ctx := context.Background()
	alice, other := passkeytest.New(approverID), passkeytest.New(operatorID)
	for i, s := range []*passkeytest.Signer{alice, other} {
		token := fmt.Sprint("link-", i)
		h.j.NewPasskeyLink(ctx, s.User, token, h.clock.Now().Add(time.Hour))
		if err := h.j.FinishPasskeyLink(ctx, token, s.Credential()); err != nil {
			t.Fatal(err)
		}
	}
	task, err := h.op.StartTask(ctx, journal.Task{Requester: operatorID, Chat: "1"})
	if err != nil {
		t.Fatal(err)
	}
	r, err := h.op.Call(ctx, task.ID, callSend("222", "hello"))
	if err != nil || r.Status != action.StatusPending || !strings.Contains(r.Reason, "passkey") {
		t.Fatalf("Call = %+v, %v; want pending, saying a passkey is awaited", r, err)
	}
	apID := h.approval(r.OperationID)
	a := h.latestApproval(r.OperationID)
	if _, err := h.op.Record(ctx, apID, approverID, true); !refusedFor(err, policy.FactorPasskey) {
		t.Fatalf("a tap alone = %v, want it refused for want of a passkey", err)
	}
	if _, err := h.op.ConfirmPasskey(ctx, apID, approverID, alice.Receipt(apID, strings.Repeat("0", 64))); !errors.Is(err, operator.ErrPasskeyRefused) {
		t.Fatalf("a receipt of another payload = %v, want ErrPasskeyRefused", err)
	}
	if _, err := h.op.ConfirmPasskey(ctx, apID, approverID, other.Receipt(apID, a.PayloadSHA256)); !errors.Is(err, operator.ErrNoFactor) {
		t.Fatalf("another person's passkey = %v, want ErrNoFactor", err)
	}
	if len(h.sender.Sent()) != 0 {
		t.Fatal("sent before a receipt of the approver's")
	}
	receipt := alice.Receipt(apID, a.PayloadSHA256)
	d, err := h.op.ConfirmPasskey(ctx, apID, approverID, receipt)
	if err != nil || !d.Approved() {
		t.Fatalf("ConfirmPasskey = %+v, %v; want approved", d, err)
	}
	if r, err := h.op.Proceed(ctx, d); err != nil || r.Status != action.StatusSucceeded || len(h.sender.Sent()) != 1 {
		t.Fatalf("Proceed = %+v, %v, %d sends; want sent once", r, err, len(h.sender.Sent()))
	}
	if a := h.latestApproval(r.OperationID); len(a.Votes) != 1 || a.Votes[0].StepUp != policy.FactorPasskey {
		t.Errorf("votes = %+v, want one given with a passkey", a.Votes)
	}
	if _, err := h.op.ConfirmPasskey(ctx, apID, approverID, receipt); !errors.Is(err, operator.ErrDecided) {
		t.Errorf("the receipt replayed on its approval = %v, want ErrDecided", err)
	}
	// Moved to the next approval, the receipt signs the wrong challenge.
	r, _ = h.op.Call(ctx, task.ID, callSend("222", "again"))
	moved := receipt
	moved.Approval = h.approval(r.OperationID)
	if _, err := h.op.ConfirmPasskey(ctx, moved.Approval, approverID, moved); !errors.Is(err, operator.ErrPasskeyRefused) {
		t.Errorf("the receipt moved to another approval = %v, want ErrPasskeyRefused", err)
	}
	if a := h.latestApproval(r.OperationID); a.Decision != journal.Pending || len(a.Votes) != 0 || len(h.sender.Sent()) != 1 {
		t.Errorf("after the replays: %+v, %d sends; want the next approval untouched and one send", a, len(h.sender.Sent()))
	}
}
