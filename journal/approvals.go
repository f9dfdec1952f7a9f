package journal

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"time"

	"github.com/countersign/countersign/audit"
	"github.com/countersign/countersign/policy"
)

// Decision is what became of an approval.
type Decision string

// The decisions. An empty Decision is an approval still waiting.
const (
	Pending        Decision = ""
	DecideApprove  Decision = audit.DecisionApproved // what the offline check reads as approved
	DecideReject   Decision = "rejected"
	DecideExpire   Decision = "expired"
	DecideWithdraw Decision = "withdrawn"
	// DecideEdit: an approver replaced the payload before anyone approved it;
	// the operation waits on a new approval for the new payload.
	DecideEdit Decision = "edited"
)

// ByPolicy is the decider of an approval that an auto_approve rule granted.
const ByPolicy policy.UserID = -1

// Approval is one request for a human's tap, bound to the hash of the exact payload.
type Approval struct {
	ID            string
	OperationID   string
	PayloadSHA256 string
	Requester     policy.UserID
	Created       time.Time
	Expires       time.Time
	Decision      Decision
	DecidedBy     policy.UserID
	DecidedAt     time.Time
	// Required is how many different approvers must approve (a quorum; 1 when
	// the policy asks for no more). Any rejection ends it.
	Required int
	// Escalated is when the approval went to the escalation list of approvers
	// too; zero when it has not.
	Escalated time.Time
	// Grant names the grant that approved it, "" when taps did.
	Grant string
	// Votes are the approvals given so far by different approvers, oldest
	// first, when Required is more than one or a grant gave one. Read with
	// Votes; Decide fills them in.
	Votes []Vote
	// Shown is when an operator last published the approval for its surfaces
	// to show, and ShownBy names that operator's run; zero when none did. The
	// owner's watch shows what nobody showed (ShowApproval), so an operator
	// that publishes as it asks sets both before the approval is stored.
	Shown   time.Time
	ShownBy string
	// StepUp is the second factor each approver must give beside the tap
	// (stepup.go): an approval that asks one records a vote for every
	// approver, with the factor given, and none without it.
	StepUp policy.Factor
}

// Vote is one approver's approval of an approval that needs several, that a
// grant gave in its granter's name, or that asked a second factor.
type Vote struct {
	By    policy.UserID
	At    time.Time
	Grant string // the grant that voted; "" for a tap
	// StepUp is the second factor the approver gave with the tap; NoFactor
	// for a tap alone or a grant.
	StepUp policy.Factor
}

// Approvals reports how many different approvers approved so far.
func (a Approval) Approvals() int {
	if a.Decision == DecideApprove && len(a.Votes) == 0 {
		return 1 // a single approval records no vote
	}
	return len(a.Votes)
}

// Missing is how many more approvers must approve a pending approval.
func (a Approval) Missing() int { return max(0, a.required()-len(a.Votes)) }

func (a Approval) required() int { return max(1, a.Required) }

// NewApproval returns an approval for op that expires after ttl, with a fresh id,
// needing one approver; set Required for a quorum. Pass it in the Move to
// AwaitingApproval, which stores both at once.
func (j *Journal) NewApproval(op Operation, requester policy.UserID, ttl time.Duration) *Approval {
	now := j.now().UTC()
	return &Approval{ID: NewID("ap"), OperationID: op.ID, PayloadSHA256: op.PayloadSHA256,
		Requester: requester, Created: now, Expires: now.Add(ttl), Required: 1}
}

// NewApprovalOf is NewApproval for an approval that needs required approvers,
// each giving factor beside the tap.
func (j *Journal) NewApprovalOf(op Operation, requester policy.UserID, ttl time.Duration, required int, factor policy.Factor) *Approval {
	a := j.NewApproval(op, requester, ttl)
	a.Required, a.StepUp = required, factor
	return a
}

func insertApproval(ctx context.Context, tx txn, a *Approval) error {
	a.Required = a.required()
	err := tx.Later(ctx, "insert approval", `INSERT INTO approvals(id, operation_id, payload_sha256, requester, created_at, expires_at, required, shown_at, shown_by, step_up)
		VALUES(?, ?, ?, ?, ?, ?, ?, ?, ?, ?)`, a.ID, a.OperationID, a.PayloadSHA256, a.Requester, ms(a.Created), ms(a.Expires), a.Required, ms(a.Shown), a.ShownBy, a.StepUp)
	if err != nil {
		return fmt.Errorf("journal: create approval for %s: %w", a.OperationID, err)
	}
	tx.auditApproval(a)
	return nil
}

// approvalBase are the columns approvals had when the audit trail began: its
// genesis digest reads these, in the migration before the later ones exist.
const approvalBase = `id, operation_id, payload_sha256, requester, created_at, expires_at, decision, decided_by, decided_at`

const approvalColumns = approvalBase + `, required, escalated_at, grant_id, shown_at, shown_by, step_up`

func scanApproval(row interface{ Scan(...any) error }) (Approval, error) {
	var a Approval
	var c, e, d, esc, shown int64
	err := row.Scan(&a.ID, &a.OperationID, &a.PayloadSHA256, &a.Requester, &c, &e, &a.Decision, &a.DecidedBy, &d, &a.Required, &esc, &a.Grant, &shown, &a.ShownBy, &a.StepUp)
	a.Created, a.Expires, a.DecidedAt, a.Escalated, a.Shown = fromMS(c), fromMS(e), fromMS(d), fromMS(esc), fromMS(shown)
	return a, err
}

func scanApprovalBase(row interface{ Scan(...any) error }) (Approval, error) {
	var a Approval
	var c, e, d int64
	err := row.Scan(&a.ID, &a.OperationID, &a.PayloadSHA256, &a.Requester, &c, &e, &a.Decision, &a.DecidedBy, &d)
	a.Created, a.Expires, a.DecidedAt, a.Required = fromMS(c), fromMS(e), fromMS(d), 1
	return a, err
}

// Approval returns an approval by id, or ErrNotFound.
func (j *Journal) Approval(ctx context.Context, id string) (Approval, error) {
	a, err := scanApproval(j.db.QueryRowContext(ctx, "SELECT "+approvalColumns+" FROM approvals WHERE id = ?", id))
	if errors.Is(err, sql.ErrNoRows) {
		return a, fmt.Errorf("journal: approval %s: %w", id, ErrNotFound)
	}
	if err != nil {
		return a, fmt.Errorf("journal: approval %s: %w", id, err)
	}
	return j.withVotes(ctx, a)
}

// withVotes reads the votes of a, when it can have any: most approvals need
// one tap and record none (an approval approved may hold one given with a
// code it did not ask).
func (j *Journal) withVotes(ctx context.Context, a Approval) (Approval, error) {
	if a.Required <= 1 && a.Grant == "" && a.StepUp == policy.NoFactor && a.Decision != DecideApprove {
		return a, nil
	}
	var err error
	if a.Votes, err = votes(ctx, j.db, a.ID); err != nil {
		return a, fmt.Errorf("journal: %w", err)
	}
	return a, nil
}

// LatestApproval returns the newest approval of an operation, or ErrNotFound.
//
// The newest is picked here (by creation, then insertion) rather than by the
// statement: an operation has one approval or a few, and SQLite's sorter
// costs a send more than the read itself.
func (j *Journal) LatestApproval(ctx context.Context, opID string) (Approval, error) {
	a, err := j.latestApproval(ctx, opID)
	if errors.Is(err, sql.ErrNoRows) {
		return a, fmt.Errorf("journal: approval of %s: %w", opID, ErrNotFound)
	}
	if err != nil {
		return a, fmt.Errorf("journal: approval of %s: %w", opID, err)
	}
	return j.withVotes(ctx, a)
}

func (j *Journal) latestApproval(ctx context.Context, opID string) (Approval, error) {
	rows, err := j.db.QueryContext(ctx, "SELECT "+approvalColumns+", "+j.d.Seq+" FROM approvals WHERE operation_id = ?", opID)
	if err != nil {
		return Approval{}, err
	}
	defer rows.Close()
	var latest Approval
	last, found := int64(0), false
	for rows.Next() {
		var seq int64
		a, err := scanApproval(seqScanner{rows, &seq})
		if err != nil {
			return Approval{}, err
		}
		if !found || a.Created.After(latest.Created) || a.Created.Equal(latest.Created) && seq > last {
			latest, last, found = a, seq, true
		}
	}
	if err := rows.Err(); err != nil {
		return Approval{}, err
	}
	if !found {
		return Approval{}, sql.ErrNoRows
	}
	return latest, nil
}

// seqScanner scans a row whose last column is its seq into seq, the others
// as the scan it is given asks.
type seqScanner struct {
	row interface{ Scan(...any) error }
	seq *int64
}

func (s seqScanner) Scan(dest ...any) error { return s.row.Scan(append(dest, s.seq)...) }

// Ballot is one decision given on an approval: by whom, under which grant,
// and with which second factor.
type Ballot struct {
	Decision Decision
	By       policy.UserID
	// Grant, when set, names the grant that decides in its granter's (By's)
	// name: Decide checks in its transaction that the grant covers the
	// approval's operation and is in force.
	Grant string
	// Code, when set, is a TOTP code By gives with an approval: Decide checks
	// it against By's factor in its transaction, which records the code's
	// step (stepup.go), and records the vote as given with FactorTOTP. A code
	// on a rejection is not read.
	Code string
	// Receipt, when set, is By's passkey assertion of the approval, checked
	// already by the surface that took it: Decide checks it again in its
	// transaction against By's stored credential (passkeys.go), keeps the
	// credential's counter, records the vote as given with FactorPasskey and
	// chains the receipt after it.
	Receipt *audit.PasskeyReceipt
	// StepUp is the second factor the caller's policy asks of this approval
	// now. Decide asks the stronger of it and the approval's own StepUp (what
	// was asked when the approval was made), and refuses an approval given
	// without it with a *StepUpError: a policy that asks more since the
	// approval was made is not met by less, and the check is made once, in
	// the transaction that records the vote.
	StepUp policy.Factor
}

// Decide records the decision on an approval and moves its operation out of
// awaiting_approval, in one transaction: the first decision wins. A later decision
// returns ErrDecided with the approval as it was decided; a decision at or after the
// expiry records the expiry instead and returns ErrExpired. Checking that the decider
// may approve is the caller's job.
//
// An approval that needs several approvers (Required) records each approval as
// a vote and is decided by the vote that completes it: Decide returns it still
// pending, with its votes, until then; a second vote by the same approver
// returns ErrVoted and changes nothing. A rejection decides at once.
func (j *Journal) Decide(ctx context.Context, id string, d Decision, by policy.UserID) (Approval, error) {
	return j.DecideBallot(ctx, id, Ballot{Decision: d, By: by})
}

// DecideBallot is Decide for a ballot that may name a grant or give a second
// factor. A ballot that approves without the second factor asked of it (the
// stronger of the approval's StepUp and the ballot's) is refused with a
// *StepUpError, which unwraps to ErrStepUpMissing, and records nothing.
func (j *Journal) DecideBallot(ctx context.Context, id string, b Ballot) (Approval, error) {
	var a Approval
	expired := false
	var refused error
	err := j.tx(ctx, func(tx txn) error {
		var err error
		refused = nil
		a, err = j.decideIn(ctx, tx, id, b, &expired, &refused)
		return err
	})
	switch {
	case errors.Is(err, ErrDecided), errors.Is(err, ErrVoted), errors.Is(err, ErrStepUpMissing):
		return a, err
	case err == nil && refused != nil:
		return a, refused
	case err != nil:
		return a, fmt.Errorf("journal: decide %s: %w", id, err)
	case expired:
		return a, fmt.Errorf("journal: decide %s: %w", id, ErrExpired)
	}
	return a, nil
}

// decideIn is DecideBallot within tx. *expired is set when the approval's
// time had passed and the expiry was recorded instead of b; *refused when b's
// code was refused and its count recorded instead of b.
//
// The read of the approval locks its row until tx ends, before its votes are
// read: two approvers of a quorum voting at once are counted one after the
// other, so that the vote that completes it decides it.
func (j *Journal) decideIn(ctx context.Context, tx txn, id string, b Ballot, expired *bool, refused *error) (Approval, error) {
	a, err := scanApproval(tx.QueryRowContext(ctx, "SELECT "+approvalColumns+" FROM approvals WHERE id = ?"+tx.RowLock(" FOR UPDATE"), id))
	if errors.Is(err, sql.ErrNoRows) {
		return a, fmt.Errorf("approval %s: %w", id, ErrNotFound)
	}
	if err != nil {
		return a, err
	}
	if a.Votes, err = votes(ctx, tx, id); err != nil {
		return a, err
	}
	if a.Decision != Pending {
		return a, ErrDecided
	}
	now := j.now().UTC()
	if !now.Before(a.Expires) {
		// Record the expiry and commit it; only the decision fails.
		*expired = true
		return a, j.decide(ctx, tx, &a, DecideExpire, 0, now)
	}
	if b.Grant != "" {
		if err := j.grantCovers(ctx, tx, b.Grant, a, now); err != nil {
			return a, err
		}
		a.Grant = b.Grant
	}
	// Refused before its code or receipt is read: a factor too weak for
	// what is asked spends no code and counts no wrong one.
	if asked := policy.Strongest(a.StepUp, b.StepUp); b.Decision == DecideApprove && !b.offered().Covers(asked) {
		return a, &StepUpError{Approval: a.ID, Asked: asked, Given: b.offered()}
	}
	given, err := j.factorGiven(ctx, tx, a, b, now)
	if cerr := (*CodeError)(nil); errors.As(err, &cerr) {
		*refused = err // its count toward the lockout stays recorded
		return a, nil
	}
	if err != nil {
		return a, err
	}
	if b.Decision == DecideApprove && (a.required() > 1 || b.Grant != "" || given != policy.NoFactor || a.StepUp != policy.NoFactor) {
		if err := j.vote(ctx, tx, &a, b, given, now); err != nil {
			return a, err
		}
		if given == policy.FactorPasskey {
			if err := j.keepReceipt(ctx, tx, a, b.By, *b.Receipt, now); err != nil {
				return a, err
			}
		}
		if len(a.Votes) < a.required() {
			return a, nil
		}
	}
	return a, j.decide(ctx, tx, &a, b.Decision, b.By, now)
}

// ExpireDue records the expiry of every pending approval whose time has passed and
// moves its operation to expired. It returns the approvals it expired.
func (j *Journal) ExpireDue(ctx context.Context) ([]Approval, error) {
	return j.expireDue(ctx, "SELECT id FROM approvals WHERE decision = '' AND expires_at <= ?", ms(j.now()))
}

// ExpireDueOf is ExpireDue for the approvals of operations delivered by
// transport: the owner of a transport expires its own, and the surfaces that
// show them hear of it from that owner's events.
func (j *Journal) ExpireDueOf(ctx context.Context, transport string) ([]Approval, error) {
	return j.expireDue(ctx, `SELECT a.id FROM approvals a JOIN operations o ON o.id = a.operation_id
		WHERE a.decision = '' AND a.expires_at <= ? AND o.transport = ?`, ms(j.now()), transport)
}

func (j *Journal) expireDue(ctx context.Context, query string, args ...any) ([]Approval, error) {
	rows, err := j.db.QueryContext(ctx, query, args...)
	if err != nil {
		return nil, fmt.Errorf("journal: expire approvals: %w", err)
	}
	var ids []string
	for rows.Next() {
		var id string
		if err := rows.Scan(&id); err != nil {
			rows.Close()
			return nil, fmt.Errorf("journal: expire approvals: %w", err)
		}
		ids = append(ids, id)
	}
	rows.Close()
	var expired []Approval
	for _, id := range ids {
		a, err := j.Decide(ctx, id, DecideExpire, 0)
		if errors.Is(err, ErrDecided) {
			continue // decided in the meantime
		}
		if err != nil && !errors.Is(err, ErrExpired) {
			return expired, err
		}
		expired = append(expired, a)
	}
	return expired, nil
}

// Withdraw closes the pending approval of an operation and moves the operation from
// awaiting_approval to cancelled, in one transaction. It returns ErrDecided when the
// approval was decided first.
func (j *Journal) Withdraw(ctx context.Context, opID string, reason string) error {
	return j.tx(ctx, func(tx txn) error {
		now := j.now().UTC()
		rows, err := tx.QueryContext(ctx, `UPDATE approvals SET decision = ?, decided_at = ? WHERE operation_id = ? AND decision = '' RETURNING id`,
			DecideWithdraw, ms(now), opID)
		if err != nil {
			return fmt.Errorf("journal: withdraw %s: %w", opID, err)
		}
		var ids []string
		for rows.Next() {
			var id string
			if err := rows.Scan(&id); err != nil {
				rows.Close()
				return fmt.Errorf("journal: withdraw %s: %w", opID, err)
			}
			ids = append(ids, id)
		}
		rows.Close()
		if err := rows.Err(); err != nil {
			return fmt.Errorf("journal: withdraw %s: %w", opID, err)
		}
		if len(ids) == 0 {
			return ErrDecided
		}
		for _, id := range ids {
			tx.auditDecision(&Approval{ID: id, OperationID: opID}, DecideWithdraw, 0, now)
		}
		return j.move(ctx, tx, opID, Move{From: AwaitingApproval, To: Cancelled, Reason: reason})
	})
}

func (j *Journal) decide(ctx context.Context, tx txn, a *Approval, d Decision, by policy.UserID, now time.Time) error {
	res, err := tx.ExecContext(ctx, `UPDATE approvals SET decision = ?, decided_by = ?, decided_at = ?, grant_id = ? WHERE id = ? AND decision = ''`,
		d, by, ms(now), a.Grant, a.ID)
	if err != nil {
		return err
	}
	if n, _ := res.RowsAffected(); n != 1 {
		return ErrDecided
	}
	a.Decision, a.DecidedBy, a.DecidedAt = d, by, now
	tx.auditDecision(a, d, by, now)
	if d == DecideEdit {
		return nil // the edit moves the operation, with its new payload
	}
	to := map[Decision]State{DecideApprove: Approved, DecideReject: Rejected, DecideExpire: Expired}[d]
	if to == "" {
		return fmt.Errorf("decision %q is not approve, reject or expire", d)
	}
	reason := fmt.Sprintf("%s by %d", d, by)
	switch {
	case d == DecideExpire:
		reason = "expired"
	case by == ByPolicy:
		reason = "approved by an auto_approve rule"
	case a.Grant != "":
		reason = fmt.Sprintf("%s by %d under grant %s", d, by, a.Grant)
	case len(a.Votes) > 1:
		reason = fmt.Sprintf("%s by %s", d, voters(a.Votes))
	}
	return j.move(ctx, tx, a.OperationID, Move{From: AwaitingApproval, To: to, Reason: reason})
}
