package journal

import (
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"fmt"
	"time"

	"github.com/countersign/countersign/action"
	"github.com/countersign/countersign/audit"
	"github.com/countersign/countersign/policy"
)

// Edit is a payload an approver replaced before anyone approved it: the payload
// as it was (the operation holds the new one), who replaced it and when, and
// the approval the edit voided.
type Edit struct {
	Operation string
	Seq       int // 1 for an operation's first edit
	Old       action.Payload
	OldSHA256 string
	NewSHA256 string
	By        policy.UserID
	At        time.Time
	Approval  string
}

// ReasonEdited starts the reason of the move that records an edit.
const ReasonEdited = "payload edited by"

// EditPayload replaces the payload of the operation that waits on approval
// apID with p, in by's name, in one transaction: the approval is closed as
// edited, the payload it was bound to is kept (Edits), the operation moves from
// awaiting_approval to awaiting_approval with p, and next, an approval of p, is
// asked. ErrDecided when the approval was decided first; ErrExpired, with
// nothing changed, when its time is over (the sweep records the expiry).
func (j *Journal) EditPayload(ctx context.Context, apID string, p action.Payload, by policy.UserID, next *Approval) (Edit, error) {
	var e Edit
	err := j.tx(ctx, func(tx txn) error {
		// Locked, like a decision's: the payload read next is the one the
		// approval is still bound to when the edit closes it.
		a, err := scanApproval(tx.QueryRowContext(ctx, "SELECT "+approvalColumns+" FROM approvals WHERE id = ?"+tx.RowLock(" FOR UPDATE"), apID))
		if errors.Is(err, sql.ErrNoRows) {
			return fmt.Errorf("approval %s: %w", apID, ErrNotFound)
		}
		if err != nil {
			return err
		}
		now := j.now().UTC()
		switch {
		case a.Decision != Pending:
			return ErrDecided
		case !now.Before(a.Expires):
			return ErrExpired
		}
		var old string
		if err := tx.QueryRowContext(ctx, "SELECT payload FROM operations WHERE id = ?", a.OperationID).Scan(&old); err != nil {
			return fmt.Errorf("operation %s: %w", a.OperationID, err)
		}
		e = Edit{Operation: a.OperationID, OldSHA256: a.PayloadSHA256, NewSHA256: p.SHA256(), By: by, At: now, Approval: a.ID}
		if err := json.Unmarshal([]byte(old), &e.Old); err != nil {
			return fmt.Errorf("operation %s: payload: %w", a.OperationID, err)
		}
		if err := tx.QueryRowContext(ctx, "SELECT COUNT(*) + 1 FROM payload_edits WHERE operation_id = ?", a.OperationID).Scan(&e.Seq); err != nil {
			return err
		}
		if err := j.decide(ctx, tx, &a, DecideEdit, by, now); err != nil {
			return err
		}
		if _, err := tx.ExecContext(ctx, `INSERT INTO payload_edits(operation_id, seq, old_payload, old_sha256, new_sha256, edited_by, at, approval_id)
			VALUES(?, ?, ?, ?, ?, ?, ?, ?)`, e.Operation, e.Seq, old, e.OldSHA256, e.NewSHA256, by, ms(now), a.ID); err != nil {
			return fmt.Errorf("edit of %s: %w", e.Operation, err)
		}
		tx.audit(audit.Edit, e.Operation, a.ID, now, e.fact())
		next.OperationID, next.PayloadSHA256 = e.Operation, e.NewSHA256
		return j.move(ctx, tx, e.Operation, Move{From: AwaitingApproval, To: AwaitingApproval,
			Reason: fmt.Sprintf("%s %d: sha256 %s -> %s", ReasonEdited, by, short(e.OldSHA256), short(e.NewSHA256)), Payload: &p, Approval: next})
	})
	switch {
	case errors.Is(err, ErrDecided), errors.Is(err, ErrExpired):
		return e, err
	case err != nil:
		return e, fmt.Errorf("journal: edit %s: %w", apID, err)
	}
	return e, nil
}

func (e Edit) fact() audit.EditFact {
	return audit.EditFact{Seq: e.Seq, Old: e.OldSHA256, New: e.NewSHA256, By: int64(e.By), At: ms(e.At), Approval: e.Approval}
}

func short(sha string) string { return sha[:min(12, len(sha))] }

// Edits returns the edits of operation id, oldest first.
func (j *Journal) Edits(ctx context.Context, id string) ([]Edit, error) {
	return j.edits(ctx, "SELECT operation_id, seq, old_payload, old_sha256, new_sha256, edited_by, at, approval_id FROM payload_edits WHERE operation_id = ? ORDER BY seq", id)
}

func (j *Journal) edits(ctx context.Context, query string, args ...any) ([]Edit, error) {
	return readEdits(ctx, j.db, query, args...)
}

// readEdits reads the edits query selects through q.
func readEdits(ctx context.Context, q queryer, query string, args ...any) ([]Edit, error) {
	rows, err := q.QueryContext(ctx, query, args...)
	if err != nil {
		return nil, fmt.Errorf("journal: edits: %w", err)
	}
	defer rows.Close()
	var es []Edit
	for rows.Next() {
		var e Edit
		var old string
		var at int64
		if err := rows.Scan(&e.Operation, &e.Seq, &old, &e.OldSHA256, &e.NewSHA256, &e.By, &at, &e.Approval); err != nil {
			return nil, fmt.Errorf("journal: edits: %w", err)
		}
		e.At = fromMS(at)
		if err := json.Unmarshal([]byte(old), &e.Old); err != nil {
			return nil, fmt.Errorf("journal: edit %d of %s: %w", e.Seq, e.Operation, err)
		}
		es = append(es, e)
	}
	return es, rows.Err()
}
