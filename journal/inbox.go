package journal

import (
	"context"
	"database/sql"
	"fmt"
	"time"
)

// InboxItem is one received update.
type InboxItem struct {
	UpdateID int64
	Body     []byte
}

// Receive stores updates durably, in one transaction, before they are confirmed to
// the service. It returns the ones not stored before (a redelivered update is not
// returned twice).
func (j *Journal) Receive(ctx context.Context, items []InboxItem) ([]InboxItem, error) {
	var fresh []InboxItem
	err := j.tx(ctx, func(tx *sql.Tx) error {
		for _, it := range items {
			res, err := tx.ExecContext(ctx, `INSERT OR IGNORE INTO inbox(update_id, body, received_at) VALUES(?, ?, ?)`,
				it.UpdateID, string(it.Body), ms(j.now()))
			if err != nil {
				return err
			}
			if n, _ := res.RowsAffected(); n == 1 {
				fresh = append(fresh, it)
			}
		}
		return nil
	})
	if err != nil {
		return nil, fmt.Errorf("journal: receive updates: %w", err)
	}
	return fresh, nil
}

// Handled marks an update's handling finished.
func (j *Journal) Handled(ctx context.Context, updateID int64) error {
	_, err := j.db.ExecContext(ctx, `UPDATE inbox SET handled_at = ? WHERE update_id = ?`, ms(j.now()), updateID)
	if err != nil {
		return fmt.Errorf("journal: update %d handled: %w", updateID, err)
	}
	return nil
}

// Unhandled returns the received updates whose handling never finished, in order.
func (j *Journal) Unhandled(ctx context.Context) ([]InboxItem, error) {
	rows, err := j.db.QueryContext(ctx, `SELECT update_id, body FROM inbox WHERE handled_at = 0 ORDER BY update_id`)
	if err != nil {
		return nil, fmt.Errorf("journal: unhandled updates: %w", err)
	}
	defer rows.Close()
	var items []InboxItem
	for rows.Next() {
		var it InboxItem
		var body string
		if err := rows.Scan(&it.UpdateID, &body); err != nil {
			return nil, fmt.Errorf("journal: unhandled updates: %w", err)
		}
		it.Body = []byte(body)
		items = append(items, it)
	}
	return items, rows.Err()
}

// PruneInbox deletes handled updates received before t; they were needed only to
// survive a crash while they were handled. It returns how many it deleted.
func (j *Journal) PruneInbox(ctx context.Context, before time.Time) (int64, error) {
	res, err := j.db.ExecContext(ctx, `DELETE FROM inbox WHERE handled_at != 0 AND received_at < ?`, ms(before))
	if err != nil {
		return 0, fmt.Errorf("journal: prune inbox: %w", err)
	}
	return res.RowsAffected()
}
