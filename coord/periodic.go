package coord

import (
	"context"
	"fmt"
	"time"

	"github.com/countersign/countersign/internal/sqlstore"
)

// TakePeriodicTurn records that the periodic work called name is done at now, and
// reports true, unless it was recorded as done at or after since: then it
// records nothing and reports false. The check and the record are one
// statement, a compare-and-set on the work's row, so of two processes (replicas
// on one PostgreSQL journal, or a process and its restart) that ask for one
// interval, one takes the turn. It waits for its write to be durable: a turn
// taken is not given again after a power cut.
func (c *Coord) TakePeriodicTurn(ctx context.Context, name string, since, now time.Time) (bool, error) {
	res, err := c.db.Exec(ctx, sqlstore.Durable, `INSERT INTO periodic(name, done_at) VALUES(?, ?)
		ON CONFLICT(name) DO UPDATE SET done_at = excluded.done_at WHERE periodic.done_at < ?`,
		name, ms(now), ms(since))
	if err != nil {
		return false, fmt.Errorf("coord: take the turn of %s: %w", name, err)
	}
	n, err := res.RowsAffected()
	if err != nil {
		return false, fmt.Errorf("coord: take the turn of %s: %w", name, err)
	}
	return n == 1, nil
}

// LastDone returns when the periodic work called name was last recorded done
// (TakePeriodicTurn); the zero time when never.
func (c *Coord) LastDone(ctx context.Context, name string) (time.Time, error) {
	var at int64
	err := c.db.QueryRowContext(ctx, `SELECT COALESCE(MAX(done_at), 0) FROM periodic WHERE name = ?`, name).Scan(&at)
	if err != nil {
		return time.Time{}, fmt.Errorf("coord: last turn of %s: %w", name, err)
	}
	return fromMS(at), nil
}
