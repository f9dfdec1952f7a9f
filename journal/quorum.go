package journal

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"math"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/countersign/countersign/audit"
	"github.com/countersign/countersign/policy"
)

// ErrVoted means the approver already approved this approval: a quorum counts
// different approvers, so a second tap by the same one changes nothing.
var ErrVoted = errors.New("already approved by this approver")

// votes reads the votes of approval id, oldest first (by time, then voter).
// They are ordered here rather than by the statement: an approval has a few
// votes, most often none, and SQLite's sorter costs a send's read of them more
// than the read itself.
func votes(ctx context.Context, q queryer, id string) ([]Vote, error) {
	rows, err := q.QueryContext(ctx, "SELECT voter, at, grant_id, step_up FROM approval_votes WHERE approval_id = ?", id)
	if err != nil {
		return nil, fmt.Errorf("votes of %s: %w", id, err)
	}
	defer rows.Close()
	var vs []Vote
	for rows.Next() {
		var v Vote
		var at int64
		if err := rows.Scan(&v.By, &at, &v.Grant, &v.StepUp); err != nil {
			return nil, fmt.Errorf("votes of %s: %w", id, err)
		}
		v.At = fromMS(at)
		vs = append(vs, v)
	}
	slices.SortFunc(vs, func(a, b Vote) int {
		return cmp.Or(a.At.Compare(b.At), cmp.Compare(a.By, b.By))
	})
	return vs, rows.Err()
}

// vote records b, given with factor, as one approver's approval of a, and
// adds it to a.Votes. Its audit record carries the factor and, with one, the
// payload hash it was given for.
func (j *Journal) vote(ctx context.Context, tx txn, a *Approval, b Ballot, factor policy.Factor, now time.Time) error {
	if voted(*a, b.By) {
		return ErrVoted
	}
	_, err := tx.ExecContext(ctx, "INSERT INTO approval_votes(approval_id, voter, at, grant_id, step_up) VALUES(?, ?, ?, ?, ?)",
		a.ID, b.By, ms(now), b.Grant, factor)
	if err != nil {
		if isUnique(err) {
			return ErrVoted
		}
		return fmt.Errorf("vote on %s: %w", a.ID, err)
	}
	v := Vote{By: b.By, At: now, Grant: b.Grant, StepUp: factor}
	a.Votes = append(a.Votes, v)
	f := audit.VoteFact{Approval: a.ID, By: int64(v.By), At: ms(now), Grant: v.Grant, Of: len(a.Votes), Required: a.required(), StepUp: string(factor)}
	if factor != policy.NoFactor {
		f.PayloadSHA256 = a.PayloadSHA256
	}
	tx.audit(audit.Vote, a.OperationID, a.ID, now, f)
	return nil
}

// voted reports whether by approved a already.
func voted(a Approval, by policy.UserID) bool {
	for _, v := range a.Votes {
		if v.By == by {
			return true
		}
	}
	return false
}

// voters names the approvers of votes: "1 and 2", "1, 2 and 3".
func voters(vs []Vote) string {
	names := make([]string, len(vs))
	for i, v := range vs {
		names[i] = strconv.FormatInt(int64(v.By), 10)
	}
	if len(names) < 2 {
		return strings.Join(names, "")
	}
	return strings.Join(names[:len(names)-1], ", ") + " and " + names[len(names)-1]
}

// Votes returns the votes given on approval id, oldest first.
func (j *Journal) Votes(ctx context.Context, id string) ([]Vote, error) {
	vs, err := votes(ctx, j.db, id)
	if err != nil {
		return nil, fmt.Errorf("journal: %w", err)
	}
	return vs, nil
}

// Escalate records that approval id went to the escalation list of approvers
// at now, once: it reports false when the approval was escalated or decided
// first.
func (j *Journal) Escalate(ctx context.Context, id string) (Approval, bool, error) {
	var a Approval
	done := false
	err := j.tx(ctx, func(tx txn) error {
		now := j.now().UTC()
		res, err := tx.ExecContext(ctx, "UPDATE approvals SET escalated_at = ? WHERE id = ? AND decision = '' AND escalated_at = 0", ms(now), id)
		if err != nil {
			return err
		}
		if n, _ := res.RowsAffected(); n != 1 {
			return nil
		}
		a, err = scanApproval(tx.QueryRowContext(ctx, "SELECT "+approvalColumns+" FROM approvals WHERE id = ?", id))
		if err != nil {
			return err
		}
		done = true
		tx.audit(audit.Escalation, a.OperationID, a.ID, now, audit.EscalationFact{Approval: a.ID, At: ms(now)})
		return nil
	})
	if err != nil {
		return a, false, fmt.Errorf("journal: escalate %s: %w", id, err)
	}
	return a, done, nil
}

// Unescalated returns the approvals still waiting, not escalated yet, whose
// share of their time to live has passed at now (created + share × ttl), of
// operations delivered by transport.
//
// The share goes to the database in millionths, a whole number, and the sum is
// whole numbers only: PostgreSQL types a parameter multiplied by a BIGINT
// column as a BIGINT, and would take 0.5 for 0 (every approval due at once).
func (j *Journal) Unescalated(ctx context.Context, transport string, share float64, now time.Time) ([]Approval, error) {
	return j.approvals(ctx, "approvals to escalate", `SELECT `+prefixed("a.", approvalColumns)+` FROM approvals a
		JOIN operations o ON o.id = a.operation_id
		WHERE a.decision = '' AND a.escalated_at = 0 AND o.transport = ? AND a.expires_at > ?
		AND a.created_at + (a.expires_at - a.created_at) * CAST(? AS BIGINT) / 1000000 <= ?
		ORDER BY a.created_at`, transport, ms(now), int64(math.Round(share*1e6)), ms(now))
}
