package journal

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"time"

	"github.com/countersign/countersign/policy"
	"github.com/countersign/countersign/stepup"
)

// The second factor (policy step_up). Each person's TOTP factor lives here,
// so that every replica checks the same codes against the same last step:
// a code is checked under its factor's row lock, in the transaction that
// records its step and the vote it gives, so that it approves once, on any
// replica, and a crash between the two leaves neither. Its secret is read
// inside that transaction only; no read of the journal returns it.

// Errors of the second factor.
var (
	// ErrStepUpMissing refuses an approval given without the second factor
	// asked of it (a tap alone, a grant, an auto_approve rule, or a weaker
	// factor than the one asked); the refusal is a *StepUpError, which names
	// the factor.
	ErrStepUpMissing = errors.New("the second factor asked was not given")
	// ErrNoFactor refuses a code from a person with no factor enrolled.
	ErrNoFactor = errors.New("no TOTP factor enrolled")
	// ErrEnrolled refuses to enrol a person enrolled already, unless asked
	// to replace their factor.
	ErrEnrolled = errors.New("a TOTP factor is enrolled already")
	// ErrCodeRefused is a code wrong, used already or malformed.
	ErrCodeRefused = errors.New("code refused")
	// ErrFactorLocked is a code given while its factor is locked.
	ErrFactorLocked = errors.New("second factor locked")
)

// StepUpError refuses a ballot that approves without the second factor
// asked of it: Asked is the stronger of what the approval asked when it was
// made and what the ballot's caller asks now (Ballot.StepUp), and Given what
// the ballot offered. It names the factor so that whoever asks the approver
// again asks for that one, never a guess from the approval. Nothing is
// recorded, and no code or receipt is read: a factor too weak spends none.
type StepUpError struct {
	Approval string
	Asked    policy.Factor
	Given    policy.Factor // NoFactor for a tap alone, a grant or an auto-approval
}

func (e *StepUpError) Error() string {
	if e.Given == policy.NoFactor {
		return fmt.Sprintf("%s asks %s beside the tap: %v", e.Approval, e.Asked, ErrStepUpMissing)
	}
	return fmt.Sprintf("%s asks %s, and %s does not cover it: %v", e.Approval, e.Asked, e.Given, ErrStepUpMissing)
}

// Unwrap returns ErrStepUpMissing.
func (e *StepUpError) Unwrap() error { return ErrStepUpMissing }

// CodeError is a code refused. Its count toward the lockout is recorded: the
// Wrong-th wrong code in a row, and the one that locked the factor until
// LockedUntil when Locked.
type CodeError struct {
	Err         error // ErrCodeRefused or ErrFactorLocked
	Why         error // stepup.ErrWrong, ErrReused or ErrMalformed; nil when locked
	User        policy.UserID
	Wrong       int
	LockedUntil time.Time // zero when not locked
	Locked      bool      // this code locked the factor
}

func (e *CodeError) Error() string {
	if e.LockedUntil.IsZero() {
		return fmt.Sprintf("code of %d refused: %v (%d of %d in a row)", e.User, e.Why, e.Wrong, stepup.MaxWrong)
	}
	if e.Why == nil {
		return fmt.Sprintf("code of %d refused: the factor is locked until %s", e.User, e.LockedUntil.UTC().Format(time.RFC3339))
	}
	return fmt.Sprintf("code of %d refused: %v; %d in a row lock the factor until %s", e.User, e.Why, e.Wrong, e.LockedUntil.UTC().Format(time.RFC3339))
}

// Unwrap returns the kind of refusal and, for a code counted, its reason.
func (e *CodeError) Unwrap() []error {
	if e.Why == nil {
		return []error{e.Err}
	}
	return []error{e.Err, e.Why}
}

// TOTPFactor is one person's TOTP factor as it can be shown: never its secret.
type TOTPFactor struct {
	User     policy.UserID
	Enrolled time.Time
	// LastStep is the time step of the last code used (stepup.Step); 0: none.
	LastStep int64
	// Wrong is how many wrong codes came in a row; LockedUntil, when the lock
	// they set ends (zero: not locked).
	Wrong       int
	LockedUntil time.Time
}

// Locked reports whether the factor refuses every code at now.
func (f TOTPFactor) Locked(now time.Time) bool { return now.Before(f.LockedUntil) }

const totpColumns = `user_id, created_at, last_step, wrong, locked_until`

func scanTOTP(row interface{ Scan(...any) error }) (TOTPFactor, error) {
	var f TOTPFactor
	var c, l int64
	err := row.Scan(&f.User, &c, &f.LastStep, &f.Wrong, &l)
	f.Enrolled, f.LockedUntil = fromMS(c), fromMS(l)
	return f, err
}

// EnrolTOTP keeps secret as user's TOTP factor. A person enrolled already is
// ErrEnrolled, unless replace: then the old secret stops working at once, and
// the count of wrong codes and any lock end with it.
func (j *Journal) EnrolTOTP(ctx context.Context, user policy.UserID, secret string, replace bool) error {
	err := j.tx(ctx, func(tx txn) error {
		now := ms(j.now())
		if replace {
			_, err := tx.ExecContext(ctx, "DELETE FROM totp_factors WHERE user_id = ?", user)
			if err != nil {
				return err
			}
		}
		_, err := tx.ExecContext(ctx, "INSERT INTO totp_factors(user_id, secret, created_at) VALUES(?, ?, ?)", user, secret, now)
		if isUnique(err) {
			return ErrEnrolled
		}
		return err
	})
	if err != nil {
		return fmt.Errorf("journal: enrol TOTP of %d: %w", user, err) // never the secret
	}
	return nil
}

// RemoveTOTP forgets user's TOTP factor: ErrNotFound when there is none.
func (j *Journal) RemoveTOTP(ctx context.Context, user policy.UserID) error {
	res, err := j.exec(ctx, durable, "DELETE FROM totp_factors WHERE user_id = ?", user)
	if err != nil {
		return fmt.Errorf("journal: remove TOTP of %d: %w", user, err)
	}
	if n, _ := res.RowsAffected(); n == 0 {
		return fmt.Errorf("journal: TOTP of %d: %w", user, ErrNotFound)
	}
	return nil
}

// TOTP returns user's TOTP factor, or ErrNotFound.
func (j *Journal) TOTP(ctx context.Context, user policy.UserID) (TOTPFactor, error) {
	f, err := scanTOTP(j.db.QueryRowContext(ctx, "SELECT "+totpColumns+" FROM totp_factors WHERE user_id = ?", user))
	if errors.Is(err, sql.ErrNoRows) {
		return f, fmt.Errorf("journal: TOTP of %d: %w", user, ErrNotFound)
	}
	if err != nil {
		return f, fmt.Errorf("journal: TOTP of %d: %w", user, err)
	}
	return f, nil
}

// TOTPFactors returns every enrolled TOTP factor, by user.
func (j *Journal) TOTPFactors(ctx context.Context) ([]TOTPFactor, error) {
	rows, err := j.db.QueryContext(ctx, "SELECT "+totpColumns+" FROM totp_factors ORDER BY user_id")
	if err != nil {
		return nil, fmt.Errorf("journal: TOTP factors: %w", err)
	}
	defer rows.Close()
	var fs []TOTPFactor
	for rows.Next() {
		f, err := scanTOTP(rows)
		if err != nil {
			return nil, fmt.Errorf("journal: TOTP factors: %w", err)
		}
		fs = append(fs, f)
	}
	return fs, rows.Err()
}

// UseTOTP checks code against user's factor and, when it is right, records
// its step, so that it is never taken again: for a code that approves
// nothing by itself (a link opened in a browser). A code that approves is
// given in its Ballot instead, checked in the decision's transaction.
// Refusals: ErrNoFactor, a *CodeError (whose count is recorded).
func (j *Journal) UseTOTP(ctx context.Context, user policy.UserID, code string) error {
	var refused error
	err := j.tx(ctx, func(tx txn) error {
		refused = j.useTOTP(ctx, tx, user, code, j.now())
		if cerr := (*CodeError)(nil); errors.As(refused, &cerr) {
			return nil // the count stays recorded
		}
		return refused
	})
	if err == nil {
		err = refused
	}
	if err != nil {
		return fmt.Errorf("journal: %w", err)
	}
	return nil
}

// offered is the second factor b offers, before it is checked: a passkey
// for a receipt, TOTP for a code, none for a tap alone or a rejection.
func (b Ballot) offered() policy.Factor {
	switch {
	case b.Decision != DecideApprove:
		return policy.NoFactor
	case b.Receipt != nil:
		return policy.FactorPasskey
	case b.Code != "":
		return policy.FactorTOTP
	}
	return policy.NoFactor
}

// factorGiven is the second factor ballot b gives on approval a, checked in
// tx: NoFactor for a ballot without a code or a receipt, or a rejection. A code from an
// approver who approved a already is ErrVoted, before it is read: a vote
// given spends no second code.
func (j *Journal) factorGiven(ctx context.Context, tx txn, a Approval, b Ballot, now time.Time) (policy.Factor, error) {
	if b.Code == "" && b.Receipt == nil || b.Decision != DecideApprove {
		return policy.NoFactor, nil
	}
	if voted(a, b.By) {
		return policy.NoFactor, ErrVoted
	}
	if b.Receipt != nil {
		if err := j.usePasskey(ctx, tx, a, b.By, *b.Receipt, now); err != nil {
			return policy.NoFactor, err
		}
		return policy.FactorPasskey, nil
	}
	if err := j.useTOTP(ctx, tx, b.By, b.Code, now); err != nil {
		return policy.NoFactor, err
	}
	return policy.FactorTOTP, nil
}

// useTOTP checks code against user's factor in tx, under the factor's row
// lock (a write lock on SQLite), and records what it came to: the code's
// step when it is right (and no wrong code in a row), one more wrong code
// when it is not, and a lock of stepup.LockFor at the stepup.MaxWrong-th.
// A lock that ended starts the count afresh.
func (j *Journal) useTOTP(ctx context.Context, tx txn, user policy.UserID, code string, now time.Time) error {
	var secret string
	var f TOTPFactor
	var c, l int64
	err := tx.QueryRowContext(ctx, "SELECT secret, created_at, last_step, wrong, locked_until FROM totp_factors WHERE user_id = ?"+tx.RowLock(" FOR UPDATE"), user).
		Scan(&secret, &c, &f.LastStep, &f.Wrong, &l)
	if errors.Is(err, sql.ErrNoRows) {
		return fmt.Errorf("user %d: %w", user, ErrNoFactor)
	}
	if err != nil {
		return fmt.Errorf("TOTP of %d: %w", user, err)
	}
	f.User, f.LockedUntil = user, fromMS(l)
	if f.Locked(now) {
		return &CodeError{Err: ErrFactorLocked, User: user, Wrong: f.Wrong, LockedUntil: f.LockedUntil}
	}
	if !f.LockedUntil.IsZero() {
		f.Wrong, f.LockedUntil = 0, time.Time{} // the lock is over
	}
	step, why := stepup.Match(secret, code, now, f.LastStep)
	if why == nil {
		_, err := tx.ExecContext(ctx, "UPDATE totp_factors SET last_step = ?, wrong = 0, locked_until = 0 WHERE user_id = ?", step, user)
		if err != nil {
			return fmt.Errorf("TOTP of %d: record the step: %w", user, err)
		}
		return nil
	}
	if !errors.Is(why, stepup.ErrWrong) && !errors.Is(why, stepup.ErrReused) && !errors.Is(why, stepup.ErrMalformed) {
		return fmt.Errorf("TOTP of %d: %w", user, why) // a secret the library cannot read: not the person's fault
	}
	ce := &CodeError{Err: ErrCodeRefused, Why: why, User: user, Wrong: f.Wrong + 1}
	if ce.Wrong >= stepup.MaxWrong {
		ce.Locked, ce.LockedUntil = true, now.Add(stepup.LockFor).UTC()
	}
	_, err = tx.ExecContext(ctx, "UPDATE totp_factors SET wrong = ?, locked_until = ? WHERE user_id = ?", ce.Wrong, ms(ce.LockedUntil), user)
	if err != nil {
		return fmt.Errorf("TOTP of %d: count a wrong code: %w", user, err)
	}
	return ce
}
