package coord

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"time"

	"github.com/countersign/countersign/internal/sqlstore"
	"github.com/countersign/countersign/journal"
	"github.com/countersign/countersign/policy"
)

// A stranger who writes to the bot is told, at most once per silence, that the
// bot is not theirs. One process remembers whom it told in memory; replicas
// behind a load balancer each see some of a stranger's messages, so they agree
// in the journal instead: the replica that marks the stranger's row
// (MarkStranger, one compare-and-set) tells them, and the others do not. The
// rows live outside the audit trail, and their writes wait for no fsync: a mark
// lost to a crash of the database costs at most one notice told twice.

// StrangerMark is a replica's mark of a stranger it is to tell now
// (MarkStranger), given back (UnmarkStranger) when the notice does not go.
type StrangerMark struct {
	Transport string
	User      policy.UserID
	Grant     string // tells this mark from a later one
}

// MarkStranger marks user, a stranger of transport, as told now, by the lease
// clock (the database's on PostgreSQL), unless someone marked them within
// silence: ok reports whether this process won the mark, and so is the one to
// tell them. Of replicas that ask at once, exactly one wins.
func (c *Coord) MarkStranger(ctx context.Context, transport string, user policy.UserID, silence time.Duration) (m StrangerMark, ok bool, err error) {
	m = StrangerMark{Transport: transport, User: user, Grant: journal.NewID("st")}
	with, args := c.slotNow()
	q := with + `INSERT INTO strangers_told (transport, user_id, told_at, grant_id) VALUES (?, ?, (SELECT now FROM c), ?)
		ON CONFLICT (transport, user_id) DO UPDATE SET told_at = excluded.told_at, grant_id = excluded.grant_id
		WHERE strangers_told.told_at <= excluded.told_at - ?
		RETURNING 1`
	var one int
	err = c.slotRow(ctx, q, append(args, transport, user, m.Grant, silence.Milliseconds()), &one)
	switch {
	case errors.Is(err, sql.ErrNoRows):
		return StrangerMark{}, false, nil
	case err != nil:
		return StrangerMark{}, false, fmt.Errorf("coord: mark stranger %d of %s: %w", user, transport, err)
	}
	return m, true, nil
}

// UnmarkStranger gives back m, whose notice did not go, so that the stranger's
// next message is told by whichever replica takes it. It reports false when m
// was no longer the stranger's mark (its silence passed and another replica
// marked them again): that mark stays.
func (c *Coord) UnmarkStranger(ctx context.Context, m StrangerMark) (bool, error) {
	res, err := c.db.Exec(ctx, sqlstore.Lazy, `DELETE FROM strangers_told WHERE transport = ? AND user_id = ? AND grant_id = ?`,
		m.Transport, m.User, m.Grant)
	if err != nil {
		return false, fmt.Errorf("coord: unmark stranger %d of %s: %w", m.User, m.Transport, err)
	}
	n, err := res.RowsAffected()
	return n == 1, err
}

// PruneStrangers deletes the marks older than age, by the lease clock: with an
// age past any silence a transport keeps, only strangers nobody would be kept
// from telling anyway are forgotten.
func (c *Coord) PruneStrangers(ctx context.Context, age time.Duration) (int64, error) {
	with, args := c.slotNow()
	res, err := c.db.Exec(ctx, sqlstore.Lazy, with+`DELETE FROM strangers_told WHERE told_at < (SELECT now FROM c) - ?`,
		append(args, age.Milliseconds())...)
	if err != nil {
		return 0, fmt.Errorf("coord: prune strangers: %w", err)
	}
	return res.RowsAffected()
}
