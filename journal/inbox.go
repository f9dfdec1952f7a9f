package journal

import (
	"context"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/countersign/countersign/internal/sqlstore"
)

// InboxItem is one received update. Key names what it carries, for example
// "message:<chat id>:<message id>" or "callback_query:<query id>": Telegram may
// number updates afresh after a week without any, so one UpdateID can later carry
// another message, while a redelivered update carries the same one under the same
// key. An item received without a Key is keyed "update:<UpdateID>".
type InboxItem struct {
	UpdateID int64
	Key      string
	Body     []byte
}

// Receive stores updates durably, in one transaction, before they are confirmed to
// the service. It returns the ones whose key was not stored before (a redelivered
// update is not returned twice), each with its Key set. A replica (Join) claims
// the ones it stores, so that another handles them only once its lease is past.
func (j *Journal) Receive(ctx context.Context, items []InboxItem) ([]InboxItem, error) {
	if j.pg != nil {
		return j.receivePG(ctx, items)
	}
	var fresh []InboxItem
	err := j.tx(ctx, func(tx txn) error {
		for _, it := range items {
			if it.Key == "" {
				it.Key = "update:" + strconv.FormatInt(it.UpdateID, 10)
			}
			until, untilArgs := j.LeaseUntil()
			res, err := tx.ExecContext(ctx, `INSERT INTO inbox(key, update_id, body, received_at, claimed_by, lease_until) VALUES(?, ?, ?, ?, ?, `+until+`) ON CONFLICT DO NOTHING`,
				append([]any{it.Key, it.UpdateID, string(it.Body), ms(j.now()), j.Replica()}, untilArgs...)...)
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

// receivePG is Receive on PostgreSQL: one statement, a transaction of its own
// (one round trip), which returns the keys it stored.
func (j *Journal) receivePG(ctx context.Context, items []InboxItem) ([]InboxItem, error) {
	if len(items) == 0 {
		return nil, nil
	}
	items = slices.Clone(items) // keyed here, not in the caller's slice
	var b strings.Builder
	b.WriteString("INSERT INTO inbox(key, update_id, body, received_at, claimed_by, lease_until) VALUES ")
	var args []any
	now := ms(j.now())
	for i := range items {
		if items[i].Key == "" {
			items[i].Key = "update:" + strconv.FormatInt(items[i].UpdateID, 10)
		}
		until, untilArgs := j.LeaseUntil()
		if i > 0 {
			b.WriteString(", ")
		}
		b.WriteString("(CAST(? AS TEXT), CAST(? AS BIGINT), CAST(? AS TEXT), CAST(? AS BIGINT), CAST(? AS TEXT), " + until + ")")
		args = append(append(args, items[i].Key, items[i].UpdateID, string(items[i].Body), now, j.Replica()), untilArgs...)
	}
	b.WriteString(" ON CONFLICT DO NOTHING RETURNING key")
	stored := map[string]bool{}
	err := j.db.WriteRows(ctx, durable, b.String(), args, func(r sqlstore.Row) error {
		var key string
		err := r.Scan(&key)
		stored[key] = true
		return err
	})
	if err != nil {
		return nil, fmt.Errorf("journal: receive updates: %w", err)
	}
	var fresh []InboxItem
	for _, it := range items {
		if stored[it.Key] {
			fresh = append(fresh, it)
			delete(stored, it.Key) // a key twice in items is fresh once
		}
	}
	return fresh, nil
}

// Handled marks the handling of the update stored under key finished. The mark
// waits for no fsync of its own (it is durable with the next write that does):
// losing it to a power cut only replays the update, which task origins and
// single-use approvals make a no-op.
func (j *Journal) Handled(ctx context.Context, key string) error {
	_, err := j.exec(ctx, lazy, `UPDATE inbox SET handled_at = ? WHERE key = ?`, ms(j.now()), key)
	if err != nil {
		return fmt.Errorf("journal: update %s handled: %w", key, err)
	}
	return nil
}

// Unhandled returns the received updates whose handling never finished, in the
// order they were received (update ids may restart lower).
func (j *Journal) Unhandled(ctx context.Context) ([]InboxItem, error) {
	rows, err := j.db.QueryContext(ctx, `SELECT key, update_id, body FROM inbox WHERE handled_at = 0 ORDER BY received_at, `+j.d.Seq)
	if err != nil {
		return nil, fmt.Errorf("journal: unhandled updates: %w", err)
	}
	defer rows.Close()
	var items []InboxItem
	for rows.Next() {
		var it InboxItem
		var body string
		if err := rows.Scan(&it.Key, &it.UpdateID, &body); err != nil {
			return nil, fmt.Errorf("journal: unhandled updates: %w", err)
		}
		it.Body = []byte(body)
		items = append(items, it)
	}
	return items, rows.Err()
}

// PruneInbox deletes handled updates received before t; they were needed only to
// survive a crash while they were handled. It returns how many it deleted. Like
// Handled it waits for no fsync: rows a power cut brings back are deleted again.
func (j *Journal) PruneInbox(ctx context.Context, before time.Time) (int64, error) {
	res, err := j.exec(ctx, lazy, `DELETE FROM inbox WHERE handled_at != 0 AND received_at < ?`, ms(before))
	if err != nil {
		return 0, fmt.Errorf("journal: prune inbox: %w", err)
	}
	return res.RowsAffected()
}
