package journal_test

import (
	"context"
	"errors"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/countersign/countersign/audit"
	"github.com/countersign/countersign/internal/passkeytest"
	"github.com/countersign/countersign/internal/pgtest"
	"github.com/countersign/countersign/internal/testclock"
	"github.com/countersign/countersign/journal"
	"github.com/countersign/countersign/policy"
	"github.com/countersign/countersign/stepup"
)

// askedStepUp moves a new operation to awaiting_approval with an approval
// that needs required approvers, each with factor.
func askedStepUp(t *testing.T, j *journal.Journal, required int, factor policy.Factor) (journal.Operation, *journal.Approval) {
	t.Helper()
	_, op := newOp(t, j)
	a := j.NewApprovalOf(op, 7, time.Hour, required, factor)
	for _, m := range []journal.Move{{From: journal.Prepared, To: journal.Verified}, {From: journal.Verified, To: journal.AwaitingApproval, Approval: a}} {
		if err := j.Move(context.Background(), op.ID, m); err != nil {
			t.Fatal(err)
		}
	}
	return op, a
}

// enrol enrols user with a fresh secret and returns it.
func enrol(t *testing.T, j *journal.Journal, user policy.UserID) string {
	t.Helper()
	secret, err := stepup.NewSecret()
	if err != nil {
		t.Fatal(err)
	}
	if err := j.EnrolTOTP(context.Background(), user, secret, false); err != nil {
		t.Fatal(err)
	}
	return secret
}

func codeAt(t *testing.T, secret string, at time.Time) string {
	t.Helper()
	c, err := stepup.Code(secret, at)
	if err != nil {
		t.Fatal(err)
	}
	return c
}

// TestAStepUpApprovalTakesACodeOnce: an approval that asks a code records no
// tap alone (ErrStepUpMissing) and no grant; a right code approves it, and
// the vote keeps the factor given (read back and in the audit trail, with
// the payload hash); the same code on another approval is refused as used;
// a person without a factor is refused.
func TestAStepUpApprovalTakesACodeOnce(t *testing.T) {
	t.Parallel()
	forEachBackend(t, testAStepUpApprovalTakesACodeOnce)
}

func testAStepUpApprovalTakesACodeOnce(t *testing.T, name string) {
	ctx := context.Background()
	c := newClock()
	j := open(t, name, c.Now)
	secret := enrol(t, j, 42)
	op, a := askedStepUp(t, j, 1, policy.FactorTOTP)
	if got, err := j.Approval(ctx, a.ID); err != nil || got.StepUp != policy.FactorTOTP {
		t.Fatalf("read back: %+v, %v; want it to ask totp", got, err)
	}
	if _, err := j.Decide(ctx, a.ID, journal.DecideApprove, 42); !errors.Is(err, journal.ErrStepUpMissing) {
		t.Fatalf("a tap alone = %v, want ErrStepUpMissing", err)
	}
	if _, err := j.Decide(ctx, a.ID, journal.DecideApprove, journal.ByPolicy); !errors.Is(err, journal.ErrStepUpMissing) {
		t.Fatalf("an auto-approval = %v, want ErrStepUpMissing", err)
	}
	g, err := j.GrantWindow(ctx, 42, op.Tool, op.Payload.Target, c.Now().Add(time.Hour))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := j.DecideBallot(ctx, a.ID, journal.Ballot{Decision: journal.DecideApprove, By: 42, Grant: g.ID}); !errors.Is(err, journal.ErrStepUpMissing) {
		t.Fatalf("a grant = %v, want ErrStepUpMissing", err)
	}
	if s := stateOf(t, j, op.ID); s != journal.AwaitingApproval {
		t.Fatalf("after a tap alone and a grant: %s, want awaiting_approval", s)
	}
	if _, err := j.DecideBallot(ctx, a.ID, journal.Ballot{Decision: journal.DecideApprove, By: 44, Code: "123456"}); !errors.Is(err, journal.ErrNoFactor) {
		t.Fatalf("a code from a person without a factor = %v, want ErrNoFactor", err)
	}
	code := codeAt(t, secret, c.Now())
	got, err := j.DecideBallot(ctx, a.ID, journal.Ballot{Decision: journal.DecideApprove, By: 42, Code: code})
	if err != nil || got.Decision != journal.DecideApprove || len(got.Votes) != 1 || got.Votes[0].StepUp != policy.FactorTOTP {
		t.Fatalf("approved with the code = %+v, %v; want approved, one vote given with totp", got, err)
	}
	if s := stateOf(t, j, op.ID); s != journal.Approved {
		t.Fatalf("after the code: %s, want approved", s)
	}
	read, err := j.Approval(ctx, a.ID)
	if err != nil || len(read.Votes) != 1 || read.Votes[0].StepUp != policy.FactorTOTP || read.Votes[0].By != 42 {
		t.Fatalf("read back: %+v, %v; want the vote with its factor", read, err)
	}
	f, err := j.TOTP(ctx, 42)
	if err != nil || f.LastStep != stepup.Step(c.Now()) || f.Wrong != 0 {
		t.Fatalf("factor after the code: %+v, %v; want its step recorded", f, err)
	}

	_, b := askedStepUp(t, j, 1, policy.FactorTOTP)
	_, err = j.DecideBallot(ctx, b.ID, journal.Ballot{Decision: journal.DecideApprove, By: 42, Code: code})
	if !errors.Is(err, journal.ErrCodeRefused) || !errors.Is(err, stepup.ErrReused) {
		t.Fatalf("the same code on another approval = %v, want refused as used", err)
	}
	if got, _ := j.Approval(ctx, b.ID); got.Decision != journal.Pending || len(got.Votes) != 0 {
		t.Fatalf("after a used code: %+v, want pending, no vote", got)
	}
	c.Add(stepup.Period)
	if _, err := j.DecideBallot(ctx, b.ID, journal.Ballot{Decision: journal.DecideApprove, By: 42, Code: codeAt(t, secret, c.Now())}); err != nil {
		t.Fatalf("the next step's code = %v, want approved", err)
	}
	if rep := verify(t, j); rep.Fault != nil {
		t.Fatalf("audit trail: %s", rep.Fault)
	}
	if recs := auditBodies(t, j, audit.Vote); len(recs) != 2 || !strings.Contains(recs[0], `"step_up":"totp"`) || !strings.Contains(recs[0], `"payload_sha256":"`+a.PayloadSHA256+`"`) {
		t.Errorf("vote records %q: want the factor and the payload hash", recs)
	} else if strings.Contains(strings.Join(recs, ""), secret) {
		t.Error("a vote record holds the secret")
	}
}

// auditBodies returns the bodies of the audit records of kind, oldest first.
func auditBodies(t *testing.T, j *journal.Journal, kind string) []string {
	t.Helper()
	var out []string
	err := j.AuditRecords(context.Background(), 0, func(r audit.Record) error {
		if r.Kind == kind {
			out = append(out, string(r.Body))
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return out
}

// TestWrongCodesInARowLockTheFactor: each wrong, used or malformed code
// counts (and is recorded, though nothing is approved); the fifth in a row
// locks the factor for fifteen minutes, during which even the right code is
// refused, uncounted; after it, the right code approves and the count starts
// afresh. A right code between wrong ones ends the row. A rejection takes no
// code.
func TestWrongCodesInARowLockTheFactor(t *testing.T) {
	t.Parallel()
	forEachBackend(t, testWrongCodesInARowLockTheFactor)
}

func testWrongCodesInARowLockTheFactor(t *testing.T, name string) {
	ctx := context.Background()
	c := newClock()
	j := open(t, name, c.Now)
	secret := enrol(t, j, 42)
	_, a := askedStepUp(t, j, 1, policy.FactorTOTP)
	right := codeAt(t, secret, c.Now())
	wrong := "000000"
	if wrong == right {
		wrong = "000001"
	}
	ballot := func(code string) error {
		_, err := j.DecideBallot(ctx, a.ID, journal.Ballot{Decision: journal.DecideApprove, By: 42, Code: code})
		return err
	}
	for i, code := range []string{wrong, "12345", "abcdef", wrong} {
		var ce *journal.CodeError
		if err := ballot(code); !errors.As(err, &ce) || ce.Wrong != i+1 || ce.Locked {
			t.Fatalf("wrong code %d = %v, want refused, %d in a row", i+1, err, i+1)
		}
	}
	if f, _ := j.TOTP(ctx, 42); f.Wrong != 4 {
		t.Fatalf("count recorded: %d, want 4", f.Wrong)
	}
	var ce *journal.CodeError
	if err := ballot(wrong); !errors.As(err, &ce) || !ce.Locked || !ce.LockedUntil.Equal(c.Now().Add(stepup.LockFor)) {
		t.Fatalf("the fifth wrong code = %v, want the factor locked for %s", err, stepup.LockFor)
	}
	if err := ballot(right); !errors.Is(err, journal.ErrFactorLocked) {
		t.Fatalf("the right code while locked = %v, want ErrFactorLocked", err)
	}
	c.Add(stepup.LockFor - time.Second)
	if err := ballot(codeAt(t, secret, c.Now())); !errors.Is(err, journal.ErrFactorLocked) {
		t.Fatalf("a second before the lock ends = %v, want ErrFactorLocked", err)
	}
	if got, _ := j.Approval(ctx, a.ID); got.Decision != journal.Pending {
		t.Fatalf("while locked: %s, want pending", got.Decision)
	}
	c.Add(time.Second)
	if err := ballot(wrong); !errors.As(err, &ce) || ce.Wrong != 1 || ce.Locked {
		t.Fatalf("a wrong code after the lock = %v, want the count started afresh", err)
	}
	if err := ballot(codeAt(t, secret, c.Now())); err != nil {
		t.Fatalf("the right code after the lock = %v", err)
	}
	if f, _ := j.TOTP(ctx, 42); f.Wrong != 0 || !f.LockedUntil.IsZero() {
		t.Fatalf("after a right code: %+v, want no count and no lock", f)
	}

	_, b := askedStepUp(t, j, 1, policy.FactorTOTP)
	if got, err := j.DecideBallot(ctx, b.ID, journal.Ballot{Decision: journal.DecideReject, By: 42}); err != nil || got.Decision != journal.DecideReject {
		t.Fatalf("a rejection without a code = %+v, %v; want rejected", got, err)
	}
}

// TestAQuorumWithStepUpTakesACodeOfEachVoter: two approvers each give a
// code; a second vote of the same approver is refused before its code is
// read (a vote given spends no second code).
func TestAQuorumWithStepUpTakesACodeOfEachVoter(t *testing.T) {
	t.Parallel()
	forEachBackend(t, testAQuorumWithStepUpTakesACodeOfEachVoter)
}

func testAQuorumWithStepUpTakesACodeOfEachVoter(t *testing.T, name string) {
	ctx := context.Background()
	c := newClock()
	j := open(t, name, c.Now)
	s42, s44 := enrol(t, j, 42), enrol(t, j, 44)
	op, a := askedStepUp(t, j, 2, policy.FactorTOTP)
	got, err := j.DecideBallot(ctx, a.ID, journal.Ballot{Decision: journal.DecideApprove, By: 42, Code: codeAt(t, s42, c.Now())})
	if err != nil || got.Decision != journal.Pending || got.Missing() != 1 {
		t.Fatalf("first voter = %+v, %v; want pending, one missing", got, err)
	}
	c.Add(stepup.Period)
	next := codeAt(t, s42, c.Now())
	if _, err := j.DecideBallot(ctx, a.ID, journal.Ballot{Decision: journal.DecideApprove, By: 42, Code: next}); !errors.Is(err, journal.ErrVoted) {
		t.Fatalf("the same voter again = %v, want ErrVoted", err)
	}
	if f, _ := j.TOTP(ctx, 42); f.LastStep != stepup.Step(c.Now())-1 {
		t.Fatalf("the second vote spent a code: last step %d", f.LastStep)
	}
	if _, err := j.DecideBallot(ctx, a.ID, journal.Ballot{Decision: journal.DecideApprove, By: 42, Code: "abcdef"}); !errors.Is(err, journal.ErrVoted) {
		t.Fatalf("the same voter with a bad code = %v, want ErrVoted, the code unread", err)
	}
	if f, _ := j.TOTP(ctx, 42); f.Wrong != 0 {
		t.Fatalf("a code after the vote was counted: %d wrong", f.Wrong)
	}
	if _, err := j.Decide(ctx, a.ID, journal.DecideApprove, 44); !errors.Is(err, journal.ErrStepUpMissing) {
		t.Fatalf("the second voter without a code = %v, want ErrStepUpMissing", err)
	}
	got, err = j.DecideBallot(ctx, a.ID, journal.Ballot{Decision: journal.DecideApprove, By: 44, Code: codeAt(t, s44, c.Now())})
	if err != nil || got.Decision != journal.DecideApprove || len(got.Votes) != 2 {
		t.Fatalf("second voter = %+v, %v; want approved by two", got, err)
	}
	for _, v := range got.Votes {
		if v.StepUp != policy.FactorTOTP {
			t.Errorf("vote %+v: want given with totp", v)
		}
	}
	if s := stateOf(t, j, op.ID); s != journal.Approved {
		t.Fatalf("state %s, want approved", s)
	}
}

// TestABallotIsRefusedWithoutTheFactorItsCallerAsks: an approval made when
// no factor was asked, decided by a caller whose policy asks a passkey now,
// takes no tap alone and no TOTP code: each is refused with a *StepUpError
// naming the passkey (what the caller asks, not what the approval asked),
// nothing is recorded, and the code is neither spent nor counted; the
// approver's passkey approves it. A caller asking less than the approval
// asked still needs the approval's factor.
func TestABallotIsRefusedWithoutTheFactorItsCallerAsks(t *testing.T) {
	t.Parallel()
	forEachBackend(t, testABallotIsRefusedWithoutTheFactorItsCallerAsks)
}

func testABallotIsRefusedWithoutTheFactorItsCallerAsks(t *testing.T, name string) {
	ctx := context.Background()
	c := newClock()
	j := open(t, name, c.Now)
	secret := enrol(t, j, 42)
	alice := passkeytest.New(42)
	enrolPasskey(t, j, alice)
	op, a := askedStepUp(t, j, 1, policy.NoFactor)
	code := codeAt(t, secret, c.Now())
	for _, tc := range []struct {
		name  string
		b     journal.Ballot
		given policy.Factor
	}{
		{"a tap alone", journal.Ballot{Decision: journal.DecideApprove, By: 42, StepUp: policy.FactorPasskey}, policy.NoFactor},
		{"a TOTP code", journal.Ballot{Decision: journal.DecideApprove, By: 42, Code: code, StepUp: policy.FactorPasskey}, policy.FactorTOTP},
	} {
		_, err := j.DecideBallot(ctx, a.ID, tc.b)
		var missing *journal.StepUpError
		if !errors.As(err, &missing) || !errors.Is(err, journal.ErrStepUpMissing) {
			t.Fatalf("%s = %v, want a *StepUpError", tc.name, err)
		}
		if want := (journal.StepUpError{Approval: a.ID, Asked: policy.FactorPasskey, Given: tc.given}); *missing != want {
			t.Errorf("%s: refusal %+v, want %+v", tc.name, *missing, want)
		}
	}
	if got, err := j.Approval(ctx, a.ID); err != nil || got.Decision != journal.Pending || len(got.Votes) != 0 || stateOf(t, j, op.ID) != journal.AwaitingApproval {
		t.Fatalf("after the refusals: %+v, %v; want nothing recorded", got, err)
	}
	if f, err := j.TOTP(ctx, 42); err != nil || f.LastStep != 0 || f.Wrong != 0 {
		t.Fatalf("factor after the refused code: %+v, %v; want the code neither spent nor counted", f, err)
	}
	r := alice.Receipt(a.ID, a.PayloadSHA256)
	got, err := j.DecideBallot(ctx, a.ID, journal.Ballot{Decision: journal.DecideApprove, By: 42, Receipt: &r, StepUp: policy.FactorPasskey})
	if err != nil || got.Decision != journal.DecideApprove || len(got.Votes) != 1 || got.Votes[0].StepUp != policy.FactorPasskey {
		t.Fatalf("approved with the passkey = %+v, %v; want approved, one vote given with a passkey", got, err)
	}

	_, b := askedStepUp(t, j, 1, policy.FactorPasskey)
	_, err = j.DecideBallot(ctx, b.ID, journal.Ballot{Decision: journal.DecideApprove, By: 42, Code: code, StepUp: policy.FactorTOTP})
	if missing := (*journal.StepUpError)(nil); !errors.As(err, &missing) || missing.Asked != policy.FactorPasskey {
		t.Fatalf("a TOTP code where the approval asks a passkey and the caller TOTP = %v, want a *StepUpError asking a passkey", err)
	}
}

// TestEnrolmentIsOncePerPersonUnlessReplaced: a second enrolment is refused
// unless it replaces the first, whose secret then stops working and whose
// count ends; removal forgets the factor; no read returns a secret.
func TestEnrolmentIsOncePerPersonUnlessReplaced(t *testing.T) {
	t.Parallel()
	forEachBackend(t, testEnrolmentIsOncePerPersonUnlessReplaced)
}

func testEnrolmentIsOncePerPersonUnlessReplaced(t *testing.T, name string) {
	ctx := context.Background()
	c := newClock()
	j := open(t, name, c.Now)
	old := enrol(t, j, 42)
	if err := j.EnrolTOTP(ctx, 42, old, false); !errors.Is(err, journal.ErrEnrolled) {
		t.Fatalf("a second enrolment = %v, want ErrEnrolled", err)
	}
	if err := j.UseTOTP(ctx, 42, "000000"); !errors.Is(err, journal.ErrCodeRefused) && codeAt(t, old, c.Now()) != "000000" {
		t.Fatalf("a wrong code = %v", err)
	}
	fresh, _ := stepup.NewSecret()
	if err := j.EnrolTOTP(ctx, 42, fresh, true); err != nil {
		t.Fatal(err)
	}
	if f, err := j.TOTP(ctx, 42); err != nil || f.Wrong != 0 {
		t.Fatalf("after replacing: %+v, %v; want no count", f, err)
	}
	if err := j.UseTOTP(ctx, 42, codeAt(t, old, c.Now())); !errors.Is(err, journal.ErrCodeRefused) {
		t.Fatalf("the old secret's code = %v, want refused", err)
	}
	if err := j.UseTOTP(ctx, 42, codeAt(t, fresh, c.Now())); err != nil {
		t.Fatalf("the new secret's code = %v", err)
	}
	enrol(t, j, 44)
	fs, err := j.TOTPFactors(ctx)
	if err != nil || len(fs) != 2 || fs[0].User != 42 || fs[1].User != 44 {
		t.Fatalf("factors = %+v, %v", fs, err)
	}
	if err := j.RemoveTOTP(ctx, 42); err != nil {
		t.Fatal(err)
	}
	if err := j.RemoveTOTP(ctx, 42); !errors.Is(err, journal.ErrNotFound) {
		t.Fatalf("removing twice = %v, want ErrNotFound", err)
	}
	if err := j.UseTOTP(ctx, 42, codeAt(t, fresh, c.Now())); !errors.Is(err, journal.ErrNoFactor) {
		t.Fatalf("a code after removal = %v, want ErrNoFactor", err)
	}
}

// TestACodeApprovesOnceAcrossReplicas: two replicas on one PostgreSQL journal
// take the same right code for two approvals at once: the factor's row lock
// lets one approve, the other is refused as used.
func TestACodeApprovesOnceAcrossReplicas(t *testing.T) {
	t.Parallel()
	name := pgtest.Fresh(t)
	c := testclock.New(time.Date(2026, 12, 2, 9, 0, 0, 0, time.UTC))
	r1, r2 := open(t, name, c.Now), open(t, name, c.Now)
	secret := enrol(t, r1, 42)
	code := codeAt(t, secret, c.Now())
	for round := 0; round < 5; round++ {
		_, a := askedStepUp(t, r1, 1, policy.FactorTOTP)
		_, b := askedStepUp(t, r2, 1, policy.FactorTOTP)
		var wg sync.WaitGroup
		errs := make([]error, 2)
		for i, pair := range []struct {
			j  *journal.Journal
			id string
		}{{r1, a.ID}, {r2, b.ID}} {
			wg.Add(1)
			go func() {
				defer wg.Done()
				_, errs[i] = pair.j.DecideBallot(context.Background(), pair.id, journal.Ballot{Decision: journal.DecideApprove, By: 42, Code: code})
			}()
		}
		wg.Wait()
		ok := 0
		for _, err := range errs {
			switch {
			case err == nil:
				ok++
			case !errors.Is(err, stepup.ErrReused):
				t.Fatalf("round %d: %v, want approved or refused as used", round, err)
			}
		}
		if ok != 1 {
			t.Fatalf("round %d: the code approved %d times: %v", round, ok, errs)
		}
		c.Add(stepup.Period)
		code = codeAt(t, secret, c.Now())
	}
}
