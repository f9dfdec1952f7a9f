// Package coord is what replicas share and never audit: the flood limits'
// send slots (slots.go), the chats' turns of agent-CLI runs (turns.go), the
// marks of strangers told (strangers.go) and the turns of periodic work
// (periodic.go). It keeps its tables in the journal's database, on its
// plumbing (internal/sqlstore), and goes by the journal's replica: its name,
// lease and lease clock. None of it is a fact of what was sent or approved,
// so none of it is in the audit trail, and most of its writes wait for no
// fsync.
package coord

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/countersign/countersign/internal/sqlstore"
	"github.com/countersign/countersign/journal"
)

// Coord is the shared state of the replica j is. It holds nothing of its own
// beside j, so that each part of a process may make one (New) from the journal
// it has.
type Coord struct {
	j  *journal.Journal
	db *sqlstore.DB
	d  *sqlstore.Dialect
}

// New is the shared state of the replica j is (or of j's one process, when it
// is no replica).
func New(j *journal.Journal) *Coord {
	db := j.Store()
	return &Coord{j: j, db: db, d: db.Dialect()}
}

// errNotReplica refuses turns to a journal that is no replica: its one process
// orders its chats' runs in memory.
var errNotReplica = errors.New("turns are taken by replicas (journal.Join)")

// lockTurn is the first key of the advisory lock under which one replica at a
// time reads and changes a chat's queue on PostgreSQL (turns.go).
const lockTurn int32 = 0x43530005

// Joined drops what an earlier process of this replica's name left, once it
// has joined (journal.Join): its chats' turns, since none of its runs lives
// on. A journal that is no replica has nothing to drop.
func (c *Coord) Joined(ctx context.Context) error {
	name := c.j.Replica()
	if name == "" {
		return nil
	}
	if _, err := c.db.Exec(ctx, sqlstore.Lazy, "DELETE FROM chat_turns WHERE replica = ?", name); err != nil {
		return fmt.Errorf("coord: drop the turns %s left: %w", name, err)
	}
	return nil
}

// RenewLeases extends the leases of what this replica holds here: its
// messages' chat turns and its requests' send slots whose lease has not run
// out. It renews with the journal's claims (journal.RenewLeases), every
// second, and waits for no fsync. A replica that lost its name renews
// nothing: what it held is the others' once its lease runs out.
func (c *Coord) RenewLeases(ctx context.Context) error {
	name := c.j.Replica()
	if name == "" {
		return nil
	}
	if c.lost() {
		return fmt.Errorf("coord: renew the leases of %s: %w", name, journal.ErrReplicaLost)
	}
	until, args := c.j.LeaseUntil()
	now, nowArgs := c.j.LeaseClock(sqlstore.Nearest)
	err := c.db.Write(ctx, sqlstore.Lazy, func(tx *sqlstore.Tx) error {
		// A chat's turn whose lease ran out stays lost: another replica may
		// have taken the chat's turn since.
		_, err := tx.ExecContext(ctx, `UPDATE chat_turns SET lease_until = `+until+` WHERE replica = ? AND lease_until >= `+now,
			append(append(args, name), nowArgs...)...)
		if err != nil {
			return err
		}
		// The send slots its requests hold, likewise: one whose hold passed
		// may be another's. They are this process's, not the name's: a process
		// of the same name before it, killed with a request out, left slots
		// that must free a lease after its death, not be renewed here. A slot
		// held past maxSlotHold lost its free, and is renewed no more.
		_, err = tx.ExecContext(ctx, `UPDATE send_slots SET free_at = `+until+` WHERE holder = ? AND open = 1 AND free_at >= `+now+` AND free_at < `+until+
			` AND taken_at > `+now+` - ?`, append(append(append(append(append(args, c.j.Life()), nowArgs...), args...), nowArgs...), maxSlotHold.Milliseconds())...)
		return err
	})
	if err != nil {
		return fmt.Errorf("coord: renew the leases of %s: %w", name, err)
	}
	return nil
}

// Release gives up, as this replica stops, its messages' places in their
// chats' queues: the other replicas' messages go at once instead of after the
// lease. The turns its runs hold stay claimed until they end.
func (c *Coord) Release(ctx context.Context) error {
	name := c.j.Replica()
	if name == "" {
		return nil
	}
	if _, err := c.db.Exec(ctx, sqlstore.Lazy, `UPDATE chat_turns SET lease_until = 0 WHERE replica = ? AND started_at = 0`, name); err != nil {
		return fmt.Errorf("coord: release the places of %s: %w", name, err)
	}
	return nil
}

// lost reports whether this replica found its name lock lost.
func (c *Coord) lost() bool {
	select {
	case <-c.j.NameLost(): // nil, and never ready, for a journal that is no replica
		return true
	default:
		return false
	}
}

// now is the journal's clock.
func (c *Coord) now() time.Time { return c.j.Clock()() }

// ms and fromMS are how the store keeps times (sqlstore.Millis).
var ms, fromMS = sqlstore.Millis, sqlstore.FromMillis
