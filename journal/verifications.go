package journal

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"time"
)

// Verification is a request that the approvers of an operation verify its unknown
// outcome (the It arrived / It did not arrive question). It resolves nothing.
type Verification struct {
	Seq         int64
	OperationID string
	Transport   string
	AskedBy     string
	Asked       time.Time
	// Repeat says AskVerification recorded nothing: this is the earlier request
	// of the interval, already asked.
	Repeat bool
}

// AskVerification records a request to verify operation opID's outcome, asked by
// by, unless one was recorded less than every ago: then it returns that request,
// with Repeat set, and records nothing, so that approvers get one question per
// operation per interval however many agents, sessions or processes ask. The
// check and the record are one write transaction, which holds the operation
// (SQLite's single writer, PostgreSQL's row lock on the operation), so two askers
// at once record one request. shown says the caller shows it itself (it owns the
// operation's transport); otherwise it waits for the owner, which finds it with
// VerificationsToShow. It returns ErrNotFound when there is no such operation.
func (j *Journal) AskVerification(ctx context.Context, opID, by string, shown bool, every time.Duration) (Verification, error) {
	v := Verification{OperationID: opID, AskedBy: by, Asked: j.now().UTC()}
	var shownAt int64
	if shown {
		shownAt = ms(v.Asked)
	}
	err := j.tx(ctx, func(tx txn) error {
		if err := tx.lockOperation(ctx, opID); err != nil {
			return err
		}
		var at int64
		err := tx.QueryRowContext(ctx, `SELECT seq, transport, asked_by, asked_at FROM verifications
			WHERE operation_id = ? AND asked_at > ? ORDER BY asked_at DESC, seq DESC LIMIT 1`,
			opID, ms(v.Asked.Add(-every))).Scan(&v.Seq, &v.Transport, &v.AskedBy, &at)
		if err == nil {
			v.Asked, v.Repeat = fromMS(at), true
			return nil
		}
		if !errors.Is(err, sql.ErrNoRows) {
			return err
		}
		// The casts give PostgreSQL the types of parameters in a select list.
		return tx.QueryRowContext(ctx, `INSERT INTO verifications(operation_id, transport, asked_by, asked_at, shown_at)
			SELECT id, transport, CAST(? AS TEXT), CAST(? AS BIGINT), CAST(? AS BIGINT) FROM operations WHERE id = ?
			RETURNING seq, transport`, by, ms(v.Asked), shownAt, opID).Scan(&v.Seq, &v.Transport)
	})
	if errors.Is(err, sql.ErrNoRows) {
		return v, fmt.Errorf("journal: operation %s: %w", opID, ErrNotFound)
	}
	if err != nil {
		return v, fmt.Errorf("journal: ask verification of %s: %w", opID, err)
	}
	return v, nil
}

// VerificationsToShow returns the requests to verify operations of transport that
// nobody has shown yet, oldest first. It reads an index of the few waiting rows,
// so the owner may ask every second.
func (j *Journal) VerificationsToShow(ctx context.Context, transport string) ([]Verification, error) {
	rows, err := j.db.QueryContext(ctx, `SELECT seq, operation_id, transport, asked_by, asked_at FROM verifications
		WHERE transport = ? AND shown_at = 0 ORDER BY seq`, transport)
	if err != nil {
		return nil, fmt.Errorf("journal: verifications to show: %w", err)
	}
	defer rows.Close()
	var vs []Verification
	for rows.Next() {
		var v Verification
		var at int64
		if err := rows.Scan(&v.Seq, &v.OperationID, &v.Transport, &v.AskedBy, &at); err != nil {
			return nil, fmt.Errorf("journal: verifications to show: %w", err)
		}
		v.Asked = fromMS(at)
		vs = append(vs, v)
	}
	return vs, rows.Err()
}

// VerificationShown marks a request shown. Like Handled it waits for no fsync of
// its own: losing the mark to a power cut shows the question once more.
func (j *Journal) VerificationShown(ctx context.Context, seq int64) error {
	if _, err := j.exec(ctx, lazy, `UPDATE verifications SET shown_at = ? WHERE seq = ? AND shown_at = 0`, ms(j.now()), seq); err != nil {
		return fmt.Errorf("journal: verification %d shown: %w", seq, err)
	}
	return nil
}
