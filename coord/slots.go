package coord

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/countersign/countersign/internal/sqlstore"
	"github.com/countersign/countersign/journal"
)

// Telegram's flood limits hold per bot, not per process: three replicas that
// each kept under 30 messages a second would send 90, and two of them could
// write to one chat in the same second. Replicas therefore count their sends in
// the journal, as slots taken from pools they share: a pool (a scope) of n
// slots admits at most n sends at once, and a slot, freed at its send's
// answer, is taken again only span later. So a pool of n slots with a span of
// one second lets at most n sends reach Telegram within any second, counted as
// telegram's own limiter counts them (from the answers), across every
// replica. Taking a slot is one compare-and-set on its row (FOR UPDATE SKIP
// LOCKED on PostgreSQL: two takers never wait for each other's row, and no lock
// covers the pool); the slot rows live outside the audit trail, and their writes
// wait for no fsync (a slot lost to a crash of the database costs at most one
// early send, which Telegram answers with a 429 that the sender waits out).

// Slot is a slot taken from a pool (TakeSlot), to be freed when its send is over
// (FreeSlot).
type Slot struct {
	Scope string
	K     int
	Grant string // tells this hold from a later taker's
}

// TakeSlot takes a free slot of the pool scope, of n slots, for a send that is
// answered or given up within hold: until it is freed (FreeSlot) or hold has
// passed, nobody else takes it. With spare above 0 it takes one only when more
// than spare are free (a send of low priority leaves the rest to others). It
// takes its place behind the senders waiting in the pool's line (QueueSlot): as
// many free slots as they are go to them first.
//
// When none may be taken it returns the zero Slot and how long until one might
// be: exact for a slot whose send was answered, and span for one still out
// (its answer comes no sooner than now, and frees it span later). The wait is
// a hint: another replica may take that slot first.
func (c *Coord) TakeSlot(ctx context.Context, scope string, n int, hold, span time.Duration, spare int) (Slot, time.Duration, error) {
	return c.takeSlot(ctx, scope, n, hold, span, spare, notQueued)
}

// QueueSlot is TakeSlot for a sender that waits until it gets a slot, and has
// waited already for this pool. A free slot goes to the senders of other
// holders that have waited longer first; when it takes none, it keeps its
// place in the pool's line, as of when it began to wait, so that the replicas'
// senders get the pool's slots in the order they began to wait, rather than an
// equal share for each replica however many senders it has waiting. Its place
// is kept while it asks again within two spans of its last ask (the wait
// TakeSlot returns is at most about a span), and LeaveSlotQueue gives it up.
// A holder keeps one place per pool: that of the last of its senders to ask,
// which should be the one that has waited longest (the Limiter lets one
// sender at a time wait on the bot's pool).
//
// A sender in line takes a slot up to QueueLead before it frees, so that the
// round trip of its take is not spent with the slot idle; with a slot, wait is
// how long until it is free, and the send must not leave before.
func (c *Coord) QueueSlot(ctx context.Context, scope string, n int, hold, span, waited time.Duration) (Slot, time.Duration, error) {
	return c.takeSlot(ctx, scope, n, hold, span, 0, max(0, waited))
}

// QueueLead is how long before it frees a slot may be taken by a sender in
// line (QueueSlot): more than a take's round trip on a busy database, so that
// a slot of a busy pool goes out again the moment it frees.
const QueueLead = 100 * time.Millisecond

// notQueued is the waited of a take that keeps no place in the line.
const notQueued time.Duration = -1

// floorWait is the least wait TakeSlot returns: that of a take that found a
// slot free but left it to a sender waiting longer, which is about to take it.
const floorWait = 5 * time.Millisecond

func (c *Coord) takeSlot(ctx context.Context, scope string, n int, hold, span time.Duration, spare int, waited time.Duration) (Slot, time.Duration, error) {
	if n < 1 {
		return Slot{}, 0, fmt.Errorf("coord: take slot of %s: a pool has at least one slot", scope)
	}
	s := Slot{Scope: scope, Grant: journal.NewID("sl")}
	lead := time.Duration(0)
	if waited != notQueued {
		lead = QueueLead
	}
	for try := 0; ; try++ {
		k, free, err := c.takeFree(ctx, s, n, hold, span, spare, waited, lead)
		if err != nil {
			return Slot{}, 0, fmt.Errorf("coord: take slot of %s: %w", scope, err)
		}
		if k >= 0 {
			s.K = k
			return s, free, nil
		}
		rows, wait, err := c.slotWait(ctx, scope, n, span, lead)
		if err != nil {
			return Slot{}, 0, fmt.Errorf("coord: take slot of %s: %w", scope, err)
		}
		if rows >= n || try > 0 {
			return Slot{}, max(wait, floorWait), nil
		}
		// The pool is new, or larger than it was: make its missing slots, free.
		if err := c.makeSlots(ctx, scope, n); err != nil {
			return Slot{}, 0, fmt.Errorf("coord: take slot of %s: %w", scope, err)
		}
	}
}

// LeaveSlotQueue gives up this holder's place in scope's line (QueueSlot): its
// sender stopped waiting without a slot.
func (c *Coord) LeaveSlotQueue(ctx context.Context, scope string) error {
	if _, err := c.db.Exec(ctx, sqlstore.Lazy, `DELETE FROM slot_waits WHERE scope = ? AND holder = ?`, scope, c.slotHolder()); err != nil {
		return fmt.Errorf("coord: leave the line of %s: %w", scope, err)
	}
	return nil
}

// queueLive is how long a place in a pool's line is kept after its sender's
// last ask: two waits, and a second for the ask itself.
func queueLive(span time.Duration) time.Duration { return 2*span + time.Second }

// maxSlotHold is the longest a slot is renewed for its send: far past any
// request's time (the Bot API client gives up after about a minute), so that a
// slot whose free was lost (the database out of reach at that moment) frees a
// lease after it, not when its process stops.
const maxSlotHold = 5 * time.Minute

// slotHolder is who holds the slots this process takes: its process among
// those that joined under its replica name (RenewLeases renews them), "" for
// a journal that is no replica.
func (c *Coord) slotHolder() string { return c.j.Life() }

// slotNow is the CTE every slot statement starts with: the lease clock's now
// (the database's on PostgreSQL), read once, as c.now, in whole milliseconds
// rounded down: a slot is free for a take no sooner than it frees.
func (c *Coord) slotNow() (string, []any) { return c.slotClock(false) }

// slotNowUp is slotNow rounded up, for a statement that sets when a slot frees:
// it frees no sooner than its span. With both, the clock's grain never lets a
// send leave before its span, which rounding now either way at the free and
// at the take would by up to a millisecond (and a service counting that
// span would take the send as one too many).
func (c *Coord) slotNowUp() (string, []any) { return c.slotClock(true) }

func (c *Coord) slotClock(up bool) (string, []any) {
	round := sqlstore.Down
	if up {
		round = sqlstore.Up
	}
	now, args := c.j.LeaseClock(round)
	return "WITH c AS (SELECT " + now + " AS now) ", args
}

// takeFree takes the slot of scope that frees first, free now or within lead,
// as s, and returns its number and how long until it is free; or -1 when none
// is, beyond those left to the senders of other holders waiting longer than
// waited (or, with spare, too few are free now). A take with waited (not
// notQueued) keeps its place in the line when it takes none, and leaves it
// when it takes one, in the same transaction.
func (c *Coord) takeFree(ctx context.Context, s Slot, n int, hold, span time.Duration, spare int, waited, lead time.Duration) (int, time.Duration, error) {
	with, args := c.slotNow()
	skip := c.d.RowLock(" FOR UPDATE SKIP LOCKED")
	holder := c.slotHolder()
	live := queueLive(span).Milliseconds()
	// me.since is when this sender began to wait: the place it holds, or now
	// less waited, whichever is earlier. The place keeps the first reckoning:
	// later ones come out later by the delay between the sender's clock and
	// this statement, and would let a sender that began later pass it.
	with += `, me AS (SELECT min(x) AS since FROM (SELECT since AS x FROM slot_waits
			WHERE scope = ? AND holder = ? AND seen_at > (SELECT now FROM c) - ?
		UNION ALL SELECT (SELECT now FROM c) - ?) m) `
	args = append(args, s.Scope, holder, live, max(0, waited).Milliseconds())
	withArgs := slices.Clone(args)
	// The senders ahead: other holders', waiting since before this one began
	// (in a tie, the holder named first).
	ahead := `(SELECT count(*) FROM slot_waits WHERE scope = ? AND holder != ? AND seen_at > (SELECT now FROM c) - ?
			AND (since < (SELECT since FROM me) OR since = (SELECT since FROM me) AND holder < ?))`
	// taken_at is when the slot frees (its old free_at, on the right of SET),
	// or now: when its send may leave.
	take := `UPDATE send_slots SET grant_id = ?, holder = ?, open = 1,
			taken_at = CASE WHEN free_at > (SELECT now FROM c) THEN free_at ELSE (SELECT now FROM c) END, free_at = (SELECT now FROM c) + ?
		WHERE scope = ? AND k = (SELECT k FROM send_slots WHERE scope = ? AND k < ? AND free_at <= (SELECT now FROM c) + ?
			ORDER BY free_at, k LIMIT 1 OFFSET ` + ahead + skip + `)
		AND free_at <= (SELECT now FROM c) + ?`
	args = append(args, s.Grant, holder, hold.Milliseconds(), s.Scope, s.Scope, n, lead.Milliseconds(),
		s.Scope, holder, live, holder, lead.Milliseconds())
	if spare > 0 {
		take += ` AND (SELECT count(*) FROM send_slots WHERE scope = ? AND k < ? AND free_at <= (SELECT now FROM c)) > ?`
		args = append(args, s.Scope, n, spare)
	}
	take += " RETURNING k, taken_at - (SELECT now FROM c) AS free"
	// The place in line: kept (as of when the sender began to wait) when
	// nothing was taken, left when a slot was.
	keep := `INSERT INTO slot_waits (scope, holder, since, seen_at) SELECT ?, ?, (SELECT since FROM me), (SELECT now FROM c)`
	upsert := ` ON CONFLICT (scope, holder) DO UPDATE SET since = excluded.since, seen_at = excluded.seen_at`
	keepArgs := []any{s.Scope, holder}
	k, free := -1, int64(0)
	var err error
	switch {
	case waited == notQueued:
		err = c.slotRow(ctx, with+take, args, &k, &free)
	case c.d.ChangesInWith:
		// One statement: the take, and the place kept or left by what it did.
		q := with + `, t AS (` + take + `),
			w AS (` + keep + ` WHERE NOT EXISTS (SELECT 1 FROM t)` + upsert + `),
			d AS (DELETE FROM slot_waits WHERE scope = ? AND holder = ? AND EXISTS (SELECT 1 FROM t))
			SELECT k, free FROM t`
		args = append(append(args, keepArgs...), s.Scope, holder)
		err = c.slotRow(ctx, q, args, &k, &free)
	default:
		err = c.db.Write(ctx, sqlstore.Lazy, func(tx *sqlstore.Tx) error {
			k = -1
			err := tx.QueryRowContext(ctx, with+take, args...).Scan(&k, &free)
			switch {
			case errors.Is(err, sql.ErrNoRows):
				_, err = tx.ExecContext(ctx, with+keep+` WHERE true`+upsert, append(withArgs, keepArgs...)...)
			case err == nil:
				_, err = tx.ExecContext(ctx, `DELETE FROM slot_waits WHERE scope = ? AND holder = ?`, s.Scope, holder)
			}
			return err
		})
	}
	if errors.Is(err, sql.ErrNoRows) {
		return -1, 0, nil
	}
	return k, time.Duration(free) * time.Millisecond, err
}

// slotWait returns how many slots of scope's first n exist, and how long until
// the first of them frees (see TakeSlot), less lead: when it may be taken.
func (c *Coord) slotWait(ctx context.Context, scope string, n int, span, lead time.Duration) (int, time.Duration, error) {
	with, args := c.slotNow()
	q := with + `SELECT count(*), COALESCE(min(CASE WHEN open = 1 AND free_at > (SELECT now FROM c) + ?
			THEN (SELECT now FROM c) + ? ELSE free_at END), 0) - (SELECT now FROM c) - ?
		FROM send_slots WHERE scope = ? AND k < ?`
	args = append(args, span.Milliseconds(), span.Milliseconds(), lead.Milliseconds(), scope, n)
	var rows int
	var wait int64
	if err := c.db.QueryRowContext(ctx, q, args...).Scan(&rows, &wait); err != nil {
		return 0, 0, err
	}
	return rows, time.Duration(wait) * time.Millisecond, nil
}

// makeSlots makes scope's slots 0..n-1 that do not exist yet, free.
func (c *Coord) makeSlots(ctx context.Context, scope string, n int) error {
	var b strings.Builder
	b.WriteString("INSERT INTO send_slots (scope, k) VALUES ")
	args := make([]any, 0, 2*n)
	for k := range n {
		if k > 0 {
			b.WriteString(", ")
		}
		b.WriteString("(?, ?)")
		args = append(args, scope, k)
	}
	b.WriteString(" ON CONFLICT DO NOTHING")
	_, err := c.db.Exec(ctx, sqlstore.Lazy, b.String(), args...)
	return err
}

// FreeSlot frees s, taken by this process, after: span after the answer of its
// send, or 0 when nothing was sent. It reports false when s was not this
// process's any more: its hold passed and another took it.
func (c *Coord) FreeSlot(ctx context.Context, s Slot, after time.Duration) (bool, error) {
	n, err := c.FreeSlots(ctx, c.now(), SlotFree{Slot: s, Span: after})
	return n == 1, err
}

// SlotFree is one slot of a send to free (FreeSlots), Span after its answer.
type SlotFree struct {
	Slot Slot
	Span time.Duration
}

// FreeSlots frees the slots of one send, taken by this process, in one
// statement: each its Span after answered, when the send's answer came (by
// the journal's clock: this process's time.Now, unless journal.WithClock). The
// database frees it at its own now plus Span less the time since answered,
// measured once the statement holds its connection and rounded up to its
// millisecond: a wait for one, under a burst, does not keep the slot from the next send,
// and a slot never frees before Span has passed since the answer. It returns
// how many were still this process's (the others' holds had passed, and
// another took them).
func (c *Coord) FreeSlots(ctx context.Context, answered time.Time, frees ...SlotFree) (int, error) {
	if len(frees) == 0 {
		return 0, nil
	}
	// The time since the answer, as of when the write has its connection.
	res, err := c.db.ExecBuilt(ctx, sqlstore.Lazy, func() (string, []any) { return c.freeSlots(answered, frees) })
	if err != nil {
		return 0, fmt.Errorf("coord: free slots of %s: %w", frees[0].Slot.Scope, err)
	}
	n, err := res.RowsAffected()
	return int(n), err
}

// freeSlots is FreeSlots' statement, as of now.
func (c *Coord) freeSlots(answered time.Time, frees []SlotFree) (string, []any) {
	since := c.now().Sub(answered)
	with, args := c.slotNowUp()
	var set, where strings.Builder
	for i, f := range frees {
		if i > 0 {
			where.WriteString(" OR ")
		}
		set.WriteString(" WHEN ? THEN CAST(? AS BIGINT)")
		where.WriteString("(scope = ? AND k = ? AND grant_id = ?)")
		after := max(0, f.Span-since)
		args = append(args, f.Slot.Grant, (after + time.Millisecond - 1).Milliseconds())
	}
	for _, f := range frees {
		args = append(args, f.Slot.Scope, f.Slot.K, f.Slot.Grant)
	}
	return with + `UPDATE send_slots SET open = 0, free_at = (SELECT now FROM c) + CASE grant_id` + set.String() + ` END
		WHERE ` + where.String(), args
}

// HoldSlot extends the hold of s, taken by this process, to hold from now: a
// send that waited long for its other slots. It reports false when s was not
// this process's any more (its hold passed, and another took it).
func (c *Coord) HoldSlot(ctx context.Context, s Slot, hold time.Duration) (bool, error) {
	with, args := c.slotNowUp()
	res, err := c.db.Exec(ctx, sqlstore.Lazy, with+`UPDATE send_slots SET open = 1, free_at = (SELECT now FROM c) + ?
		WHERE scope = ? AND k = ? AND grant_id = ?`, append(args, hold.Milliseconds(), s.Scope, s.K, s.Grant)...)
	if err != nil {
		return false, fmt.Errorf("coord: hold slot of %s: %w", s.Scope, err)
	}
	n, err := res.RowsAffected()
	return n == 1, err
}

// OweSlots keeps count of scope's first n slots busy for after from now, those
// free first: a send that counts as count+1 messages (an album) took one slot,
// and owes the others. Slots busy already keep what they owe; a pool with fewer
// free than count is short of them, as Telegram would say.
func (c *Coord) OweSlots(ctx context.Context, scope string, n, count int, after time.Duration) error {
	if count < 1 {
		return nil
	}
	if err := c.makeSlots(ctx, scope, n); err != nil {
		return fmt.Errorf("coord: owe slots of %s: %w", scope, err)
	}
	with, args := c.slotNowUp()
	skip := c.d.RowLock(" FOR UPDATE SKIP LOCKED")
	_, err := c.db.Exec(ctx, sqlstore.Lazy, with+`UPDATE send_slots SET free_at = (SELECT now FROM c) + ?
		WHERE scope = ? AND k IN (SELECT k FROM send_slots WHERE scope = ? AND k < ? AND free_at < (SELECT now FROM c) + ?
			ORDER BY free_at, k LIMIT ?`+skip+`)`,
		append(args, after.Milliseconds(), scope, scope, n, after.Milliseconds(), count)...)
	if err != nil {
		return fmt.Errorf("coord: owe slots of %s: %w", scope, err)
	}
	return nil
}

// PruneSlots deletes the slots free for longer than idle: the pools of chats
// nobody wrote to lately. A pool is made again at its next send.
func (c *Coord) PruneSlots(ctx context.Context, idle time.Duration) (int64, error) {
	with, args := c.slotNow()
	args = append(args, idle.Milliseconds())
	res, err := c.db.Exec(ctx, sqlstore.Lazy, with+`DELETE FROM send_slots WHERE free_at < (SELECT now FROM c) - ?`, args...)
	if err != nil {
		return 0, fmt.Errorf("coord: prune slots: %w", err)
	}
	// And the places in line of senders gone without leaving them.
	if _, err := c.db.Exec(ctx, sqlstore.Lazy, with+`DELETE FROM slot_waits WHERE seen_at < (SELECT now FROM c) - ?`, args...); err != nil {
		return 0, fmt.Errorf("coord: prune slots' lines: %w", err)
	}
	return res.RowsAffected()
}

// slotRow runs a write that returns one row, as a transaction of its own that
// waits for no fsync, and scans it into dest.
func (c *Coord) slotRow(ctx context.Context, query string, args []any, dest ...any) error {
	return c.db.WriteRow(ctx, sqlstore.Lazy, query, args, dest...)
}
