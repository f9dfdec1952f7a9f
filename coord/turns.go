package coord

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"strings"

	"github.com/countersign/countersign/internal/sqlstore"
	"github.com/countersign/countersign/journal"
)

// An agent CLI's run works in its chat's session and folder: two runs of one
// chat at once would resume one session twice. A process lets one message of a
// chat run at a time; replicas ask the journal's database, where each message
// that is to run queues a turn (QueueChatTurn), claimed by its replica for a
// lease that RenewLeases renews right after the replica's other claims. The turn goes to the message the
// inbox stored first among those queued (TakeChatTurn), and ends with its run
// (EndChatTurn). A turn whose lease ran out belongs to a replica that died: it
// loses its place, or the turn itself, to the next message. A run that holds
// the turn proves it now and then (HoldChatTurn) and is ended once its lease is
// too short, so that it never overlaps the run of another replica that took
// the turn after the lease.
//
// The order: of the messages of a chat that wait for the turn, the one whose
// update the inbox stored first runs first; a message that waits also lets an
// earlier message of its chat that the inbox stored and a live replica has not
// finished handling go first (it may be on its way to the queue), for at most
// one lease: a message that never queues holds the chat no longer than that.

// ErrChatTurnLost means a message's turn is gone: its lease ran out (its replica
// stopped renewing it, and another may have taken the chat's turn since), it was
// given up (Release, as the replica stops), or it was never queued. Its run must
// not start, or must end at once.
var ErrChatTurnLost = errors.New("the chat's turn is lost")

// ChatTurn names one message's run in a chat: the chat, of a transport, and the
// message's task (one turn per message).
type ChatTurn struct {
	Transport, Chat string
	Task            string
}

// ChatTurnTry is what one TakeChatTurn found.
type ChatTurnTry struct {
	// Taken: the message holds the chat's turn from now until EndChatTurn.
	Taken bool
	// Holder is the replica whose message runs in the chat now ("" when none
	// does, and an earlier message waits).
	Holder string
	// Ahead is how many messages of the chat go first: queued before this one,
	// or stored in the inbox before it and not yet handled.
	Ahead int
	// Lapsed names the replicas whose turns of this chat the try dropped
	// because their lease had run out, as "r1 (running)" or "r1 (waiting)".
	Lapsed []string
}

// QueueChatTurn puts t's message in its chat's queue, claimed by this replica for
// a lease. Its place is the inbox's order of the update that carried it (the
// task's origin, "<transport>:<inbox key>"), or, for a message the inbox never
// stored, after every update stored so far. Queuing again is a no-op.
func (c *Coord) QueueChatTurn(ctx context.Context, t ChatTurn) error {
	if c.j.Replica() == "" {
		return fmt.Errorf("coord: queue turn of %s: %w", t.Chat, errNotReplica)
	}
	var origin string
	if err := c.db.QueryRowContext(ctx, "SELECT origin FROM tasks WHERE id = ?", t.Task).Scan(&origin); err != nil {
		if errors.Is(err, sql.ErrNoRows) {
			err = journal.ErrNotFound
		}
		return fmt.Errorf("coord: queue turn of task %s: %w", t.Task, err)
	}
	key, _ := strings.CutPrefix(origin, t.Transport+":")
	now, nowArgs := c.j.LeaseClock(sqlstore.Nearest)
	until, untilArgs := c.j.LeaseUntil()
	args := append([]any{t.Task, t.Transport, t.Chat, key, c.j.Replica()}, untilArgs...)
	args = append(args, nowArgs...)
	seq := c.d.Seq
	_, err := c.db.Exec(ctx, sqlstore.Durable, `INSERT INTO chat_turns(task_id, transport, chat, ord, replica, lease_until, queued_at)
		VALUES(?, ?, ?, COALESCE((SELECT `+seq+` FROM inbox WHERE key = ?), (SELECT COALESCE(max(`+seq+`), 0) + 1 FROM inbox)), ?, `+until+`, `+now+`)
		ON CONFLICT DO NOTHING`, args...)
	if err != nil {
		return fmt.Errorf("coord: queue turn of task %s: %w", t.Task, err)
	}
	return nil
}

// queued is one row of a chat's queue.
type queued struct {
	task, replica       string
	ord, seq            int64
	until, queuedAt, at int64
}

// TakeChatTurn tries, without waiting, to give t's message its chat's turn: it
// does when no other message of the chat runs and none goes before it (see
// the order above). Turns of the chat whose lease ran out are dropped on the
// way (ChatTurnTry.Lapsed). It returns ErrChatTurnLost when t's own turn is gone (its
// lease ran out, or Release gave it up).
func (c *Coord) TakeChatTurn(ctx context.Context, t ChatTurn) (ChatTurnTry, error) {
	if c.j.Replica() == "" {
		return ChatTurnTry{}, fmt.Errorf("coord: take turn of %s: %w", t.Chat, errNotReplica)
	}
	var try ChatTurnTry
	var lost bool
	err := c.db.Write(ctx, sqlstore.Durable, func(tx *sqlstore.Tx) error {
		try, lost = ChatTurnTry{}, false
		if tx.Dialect().SideBySide { // the chat's queue is read and changed by one replica at a time
			if _, err := tx.ExecContext(ctx, "SELECT pg_advisory_xact_lock(?, ?)", lockTurn, sqlstore.AdvisoryKey(c.db.Schema(), t.Transport, t.Chat)); err != nil {
				return err
			}
		}
		rows, now, err := c.chatQueue(ctx, tx, t)
		if err != nil {
			return err
		}
		var mine *queued
		var live []queued
		for i, q := range rows {
			switch {
			case q.task == t.Task:
				mine = &rows[i]
			case q.until < now:
				what := " (waiting)"
				if q.at != 0 {
					what = " (running)"
				}
				try.Lapsed = append(try.Lapsed, q.replica+what)
				if _, err := tx.ExecContext(ctx, "DELETE FROM chat_turns WHERE task_id = ?", q.task); err != nil {
					return err
				}
			default:
				live = append(live, q)
			}
		}
		switch {
		case mine == nil || mine.replica != c.j.Replica():
			return fmt.Errorf("%w: it is not queued by this replica", ErrChatTurnLost)
		case mine.until < now:
			// Released, or not renewed in time: another replica may have run a
			// later message meanwhile; this one's place is gone (and deleted,
			// as the transaction commits).
			lost = true
			_, err := tx.ExecContext(ctx, "DELETE FROM chat_turns WHERE task_id = ?", t.Task)
			return err
		}
		for _, q := range live {
			switch {
			case q.at != 0:
				try.Holder = q.replica
			case q.ord < mine.ord || q.ord == mine.ord && q.seq < mine.seq:
				try.Ahead++
			}
		}
		if try.Holder != "" || try.Ahead > 0 {
			return nil
		}
		if try.Ahead, err = c.earlierUnhandled(ctx, tx, t, *mine, now); err != nil || try.Ahead > 0 {
			return err
		}
		until, args := c.j.LeaseUntil()
		_, err = tx.ExecContext(ctx, "UPDATE chat_turns SET started_at = ?, lease_until = "+until+" WHERE task_id = ?",
			append(append([]any{now}, args...), t.Task)...)
		try.Taken = err == nil
		return err
	})
	if err == nil && lost {
		err = fmt.Errorf("%w: its lease ran out while it waited", ErrChatTurnLost)
	}
	if err != nil {
		return ChatTurnTry{}, fmt.Errorf("coord: take turn of task %s in %s: %w", t.Task, t.Chat, err)
	}
	return try, nil
}

// chatQueue reads t's chat's queue, and the lease clock's now, in tx.
func (c *Coord) chatQueue(ctx context.Context, tx *sqlstore.Tx, t ChatTurn) ([]queued, int64, error) {
	clock, args := c.j.LeaseClock(sqlstore.Nearest)
	rows, err := tx.QueryContext(ctx, "SELECT task_id, replica, ord, "+c.d.Seq+", lease_until, queued_at, started_at, "+clock+
		" FROM chat_turns WHERE transport = ? AND chat = ? ORDER BY ord, "+c.d.Seq, append(args, t.Transport, t.Chat)...)
	if err != nil {
		return nil, 0, err
	}
	defer rows.Close()
	var qs []queued
	var now int64
	for rows.Next() {
		var q queued
		if err := rows.Scan(&q.task, &q.replica, &q.ord, &q.seq, &q.until, &q.queuedAt, &q.at, &now); err != nil {
			return nil, 0, err
		}
		qs = append(qs, q)
	}
	if err := rows.Err(); err != nil {
		return nil, 0, err
	}
	if len(qs) == 0 { // t's own row is gone: now is not needed
		return nil, 0, nil
	}
	return qs, now, nil
}

// earlierUnhandled counts the messages of t's chat that the inbox stored before
// mine's and a live replica is handling (its claim's lease holds), while mine
// has waited less than a lease. A message whose replica died is left out: the
// replica that takes it over finds its task started, and runs nothing of it
// again. Telegram keys a message's update "message:<chat>:<message id>"
// (InboxItem).
func (c *Coord) earlierUnhandled(ctx context.Context, tx *sqlstore.Tx, t ChatTurn, mine queued, now int64) (int, error) {
	if now-mine.queuedAt >= c.j.Lease().Milliseconds() {
		return 0, nil
	}
	prefix := "message:" + t.Chat + ":"
	var n int
	err := tx.QueryRowContext(ctx, "SELECT count(*) FROM inbox WHERE handled_at = 0 AND "+c.d.Seq+" < ? AND substr(key, 1, ?) = ? AND lease_until >= ?",
		mine.ord, len(prefix), prefix, now).Scan(&n)
	return n, err
}

// HoldChatTurn proves that t's message still holds its chat's turn, with more than
// a fifth of its lease left (the margin a run needs to be ended before another
// replica may take the turn). Otherwise, or when this replica lost its name, it
// returns an error wrapping ErrChatTurnLost: the run must end now.
func (c *Coord) HoldChatTurn(ctx context.Context, t ChatTurn) error {
	if c.j.Replica() == "" {
		return fmt.Errorf("coord: hold turn of %s: %w", t.Chat, errNotReplica)
	}
	if c.lost() {
		return fmt.Errorf("coord: hold turn of task %s: %w: %w", t.Task, ErrChatTurnLost, journal.ErrReplicaLost)
	}
	clock, args := c.j.LeaseClock(sqlstore.Nearest)
	var by string
	var until, at, now int64
	err := c.db.QueryRowContext(ctx, "SELECT replica, lease_until, started_at, "+clock+" FROM chat_turns WHERE task_id = ?",
		append(args, t.Task)...).Scan(&by, &until, &at, &now)
	why := ""
	switch {
	case errors.Is(err, sql.ErrNoRows):
		why = "it is not queued"
	case err != nil:
		return fmt.Errorf("coord: hold turn of task %s: %w: %w", t.Task, ErrChatTurnLost, err)
	case by != c.j.Replica():
		why = "replica " + orNobody(by) + " holds it"
	case at == 0:
		why = "it was not taken"
	case until-now < c.j.HoldMargin().Milliseconds():
		why = fmt.Sprintf("the lease has %d ms left", max(0, until-now))
	}
	if why != "" {
		return fmt.Errorf("coord: hold turn of task %s: %w: %s", t.Task, ErrChatTurnLost, why)
	}
	return nil
}

// EndChatTurn ends t's message's turn, or its place in the queue: the chat's next
// message may run. It waits for no fsync (a turn a power cut brings back runs
// out with its lease).
func (c *Coord) EndChatTurn(ctx context.Context, t ChatTurn) error {
	if c.j.Replica() == "" {
		return fmt.Errorf("coord: end turn of %s: %w", t.Chat, errNotReplica)
	}
	if _, err := c.db.Exec(ctx, sqlstore.Lazy, "DELETE FROM chat_turns WHERE task_id = ? AND replica = ?", t.Task, c.j.Replica()); err != nil {
		return fmt.Errorf("coord: end turn of task %s: %w", t.Task, err)
	}
	return nil
}

// orNobody is name, or "(none)" when it is empty.
func orNobody(name string) string {
	if name == "" {
		return "(none)"
	}
	return name
}
