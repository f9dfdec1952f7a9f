package telegram

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"strconv"
	"sync"
	"time"

	"github.com/countersign/countersign/coord"
	"github.com/countersign/countersign/internal/stages"
	"github.com/countersign/countersign/journal"
)

// Telegram's limits hold per bot token. A Limiter counts the sends of its own
// process; when its journal is one of several replicas (journal.Join), each
// send also takes a slot of the chat's pool and one of the bot's pool in the
// journal (coord.TakeSlot), freed at its answer, so that every replica's
// sends are counted together, by the same rules the Limiter keeps alone: a
// chat's ChatBurst sends at a time, each freeing its slot a chat's span after
// its answer; InSecond sends at a time over all chats, each freeing its slot a
// second after its answer, so that no more than InSecond can reach Telegram
// within any second, whatever the network does. The chat's local window and
// the Overall rate stay in front: they queue this process's sends to a chat
// without a round trip each (and keep each replica to the steady Overall
// rate), and only a send they admit asks the journal. The local window of all
// chats gives way to the bot's pool, which keeps its rule for every replica,
// its slots taken in the order the replicas' senders began to wait for them
// (coord.QueueSlot).

// shared is a Limiter's part of the budget its replicas share.
type shared struct {
	j   *journal.Journal
	c   *coord.Coord // the pools, on j
	bot string       // the pools' prefix: the bot's id, so that two bots on one journal keep apart
	// turn lets one sender of this process at a time ask the journal for a
	// slot of the bot's pool: the others queue here, not in the database.
	turn chan struct{}
	// freer frees a send's slots: c, unless a test puts one that fails there.
	freer slotFreer
	// freeTimeout bounds one try to free a send's slots (freeing).
	freeTimeout time.Duration
	// log hears of a free that failed: a slot left held holds up its chat.
	log *slog.Logger
	// mu guards retries.
	mu sync.Mutex
	// retries is where a free that failed is tried again: the work of the
	// bot's Serve, under its context (retryFreesUnder), so that the retries
	// end when the bot stops and Serve waits for them, before its journal
	// is closed. Nil while no Serve runs: a free that fails then is not tried
	// again, for nothing would end the retries.
	retries *background
}

// slotFreer frees the slots of a send (coord.Coord.FreeSlots).
type slotFreer interface {
	FreeSlots(ctx context.Context, answered time.Time, frees ...coord.SlotFree) (int, error)
}

var _ slotFreer = (*coord.Coord)(nil)

// background is where a Serve runs work of its own: its context, which ends
// when the bot stops, and spawn, which counts the work so that Serve waits for
// it before it returns.
type background struct {
	ctx   context.Context
	spawn func(func())
}

// share makes l count its sends with the other replicas of j, under the bot
// with id bot. It takes effect while j is a replica.
func (l *Limiter) share(j *journal.Journal, bot int64, log *slog.Logger) {
	c := coord.New(j)
	l.shared = &shared{j: j, c: c, freer: c, bot: strconv.FormatInt(bot, 10), turn: make(chan struct{}, 1), freeTimeout: 5 * time.Second, log: log}
}

// retryFreesUnder has the frees that fail tried again under ctx, as work that
// spawn starts, until stop: a Serve's lifetime, so that no retry outlives the
// bot and reaches its journal once closed. After stop no retry is started;
// the caller waits for those started (what spawn counts) once ctx has ended.
func (l *Limiter) retryFreesUnder(ctx context.Context, spawn func(func())) (stop func()) {
	s := l.shared
	if s == nil {
		return func() {}
	}
	s.mu.Lock()
	s.retries = &background{ctx: ctx, spawn: spawn}
	s.mu.Unlock()
	return func() {
		s.mu.Lock()
		s.retries = nil
		s.mu.Unlock()
	}
}

// hold is how long a slot is held without a renewal: the replica's lease, which
// it renews with its other claims every second (coord.RenewLeases). A slot held by a
// replica that died frees a lease later; one held by a replica that stalls with
// its request out may go to another within the request's time, at the cost of
// a 429 at most.
func (s *shared) hold() time.Duration { return s.j.Lease() }

// sharing reports whether l's sends are counted with other replicas'.
func (l *Limiter) sharing() bool { return l.shared != nil && l.shared.j.Replica() != "" }

// pools are the journal pools of a send to target: its chat's, and the bot's.
func (l *Limiter) pools(target string) (chat, all pool) {
	limit := l.chatLimit(target)
	burst := max(1, l.limits.ChatBurst)
	chat = pool{scope: l.shared.bot + " " + target, n: burst, span: spanOf(limit, burst)}
	all = pool{scope: l.shared.bot, n: l.limits.InSecond, span: time.Second}
	return chat, all
}

// pool is a journal pool of slots: n of them, each free span after its send's
// answer.
type pool struct {
	scope string
	n     int
	span  time.Duration
}

// slots are the journal slots a send took.
type slots struct {
	chat, all         coord.Slot
	chatPool, allPool pool
}

// take takes a slot of target's chat pool, then one of the bot's, waiting for
// each, and returns once both are free; with spare, it takes them only if they
// are free now and the bot's pool has more than half its slots free, and
// returns ok false otherwise.
func (s *shared) take(ctx context.Context, chat, all pool, spare bool) (got slots, ok bool, err error) {
	got.chatPool, got.allPool = chat, all
	asked := time.Now()
	for {
		c, cFree, waited, ok, err := s.takeOne(ctx, chat, 0, spare, asked)
		if err != nil || !ok {
			return slots{}, false, err
		}
		taken := time.Now()
		if waited {
			stages.Mark(ctx, stages.ChatPaced) // the chat's pacing, kept among the replicas
		} else {
			stages.Mark(ctx, stages.ChatSlot) // a round trip, no wait
		}
		select {
		case s.turn <- struct{}{}:
		case <-ctx.Done():
			s.free(c, 0)
			return slots{}, false, ctx.Err()
		}
		leave := 0
		if spare {
			leave = all.n / 2
		}
		a, aFree, _, ok, err := s.takeOne(ctx, all, leave, spare, taken)
		<-s.turn
		if err != nil || !ok {
			s.free(c, 0)
			return slots{}, false, err
		}
		if time.Since(taken) > s.hold()/2 {
			// Waited long for the bot's slot: the chat's must still be this
			// process's, for its hold from now.
			if held, err := s.c.HoldSlot(ctx, c, s.hold()); err != nil || !held {
				s.free(a, 0)
				if err != nil {
					return slots{}, false, err
				}
				continue // its hold passed and another took it: start again
			}
		}
		// A slot taken in line may free a moment after its take (QueueLead):
		// the send leaves when both are free, not before.
		if d := time.Until(latest(cFree, aFree)); d > 0 {
			if err := sleepUntilChange(ctx, d, nil); err != nil {
				s.free(c, 0)
				s.free(a, 0)
				return slots{}, false, err
			}
		}
		got.chat, got.all = c, a
		return got, true, nil
	}
}

func latest(a, b time.Time) time.Time {
	if a.After(b) {
		return a
	}
	return b
}

// takeOne takes a slot of p, leaving more than leave free, waiting until one is
// (unless now, when it returns ok false at once). A sender that waits keeps its
// place in the pool's line (coord.QueueSlot) as of since, when it began to
// wait for p, so that the replicas' senders get p's slots in turn; one that
// stops waiting without a slot gives its place up. free is when the slot it
// took is free: a slot taken in line may free a moment later. waited reports
// whether it waited for a slot to free.
func (s *shared) takeOne(ctx context.Context, p pool, leave int, now bool, since time.Time) (slot coord.Slot, free time.Time, waited, ok bool, err error) {
	if now {
		slot, _, err := s.c.TakeSlot(ctx, p.scope, p.n, s.hold(), p.span, leave)
		return slot, time.Now(), false, slot.Grant != "", err
	}
	for {
		slot, wait, err := s.c.QueueSlot(ctx, p.scope, p.n, s.hold(), p.span, time.Since(since))
		if err == nil && slot.Grant != "" {
			return slot, time.Now().Add(wait), waited || wait > 0, true, nil
		}
		if err == nil {
			waited = true
			err = sleepUntilChange(ctx, wait, nil)
		}
		if err != nil {
			s.leave(p)
			return coord.Slot{}, time.Time{}, waited, false, err
		}
	}
}

// leave gives up this process's place in p's line, not waiting for a context
// that ended: a place left would hold the others back until it lapsed.
func (s *shared) leave(p pool) {
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	_ = s.c.LeaveSlotQueue(ctx, p.scope) // a place not left lapses two spans after its last ask
}

// done frees a send's slots, each a span after its answer, which came just now:
// one statement, timed from the answer rather than from when it runs.
func (s *shared) done(got slots) {
	s.freeing(time.Now(), coord.SlotFree{Slot: got.all, Span: got.allPool.span},
		coord.SlotFree{Slot: got.chat, Span: got.chatPool.span})
}

// free frees slot after, not waiting for a context that ended: a slot left
// taken would hold its pool until its hold passed.
func (s *shared) free(slot coord.Slot, after time.Duration) {
	s.freeing(time.Now(), coord.SlotFree{Slot: slot, Span: after})
}

// freeing frees slots this process took, each its span after answered: at
// once and, when the journal does not answer within freeTimeout (a database
// busy or out of reach for a moment), again in the background until it does,
// as long as this replica would keep them or until the bot stops. A slot whose
// free is lost does not lapse: the replica renews the holds of the slots it has
// open with its lease (coord.RenewLeases), for minutes, and every send to its
// chat (or, for the bot's pool, one of its places) waits behind it that long,
// holding up the workers whose replies go there, and through them the inbox.
// Once the bot stops, its operator renews no hold, and a slot left held lapses
// a lease later.
func (s *shared) freeing(answered time.Time, frees ...coord.SlotFree) {
	err := s.tryFree(context.Background(), answered, frees)
	if err == nil {
		return
	}
	s.mu.Lock()
	defer s.mu.Unlock() // spawned under the lock: none once retryFreesUnder's stop returned
	if s.retries == nil {
		s.log.Error("a send's slots could not be freed, and the bot is not serving to try again: its chat's sends wait until their hold lapses", "err", err)
		return
	}
	s.log.Warn("a send's slots could not be freed; trying again in the background", "err", err)
	bg := s.retries
	bg.spawn(func() { s.retryFree(bg.ctx, answered, frees, err) })
}

// tryFree makes one try to free frees, of a send answered then, for at most
// freeTimeout.
func (s *shared) tryFree(ctx context.Context, answered time.Time, frees []coord.SlotFree) error {
	ctx, cancel := context.WithTimeout(ctx, s.freeTimeout)
	defer cancel()
	if _, err := s.freer.FreeSlots(ctx, answered, frees...); err != nil {
		return fmt.Errorf("freeing a send's slots: %w", err)
	}
	return nil
}

// retryFree tries to free frees again after the try that failed with err,
// with a growing pause between tries, until a try does, freeRetries have
// passed since the send's answer, or ctx (the bot's Serve) ends: a wait or a
// try under way ends with it, and no further try is made.
func (s *shared) retryFree(ctx context.Context, answered time.Time, frees []coord.SlotFree, err error) {
	for wait := 50 * time.Millisecond; time.Since(answered) < freeRetries; wait = min(2*wait, time.Second) {
		if sleep(ctx, wait) != nil {
			s.log.Warn("a send's slots were not freed before the bot stopped: they lapse with this replica's lease", "err", err)
			return
		}
		if err = s.tryFree(ctx, answered, frees); err == nil {
			s.log.Info("a send's slots freed after a retry", "after", time.Since(answered).Round(time.Millisecond))
			return
		}
	}
	s.log.Error("a send's slots could not be freed: its chat's sends wait until their hold lapses", "err", err, "tried", freeRetries)
}

// freeRetries is how long a slot's free is tried again: as long as a replica
// renews the hold of a slot it left open (coord's longest hold).
const freeRetries = 5 * time.Minute

// spend owes the slots of a send that counted as n messages (an album) as the
// local windows owe them (Spend): the chat's pool busy for n of its spans, and
// n-1 more of the bot's for their span.
func (s *shared) spend(chat, all pool, n int) error {
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	return errors.Join(
		s.c.OweSlots(ctx, chat.scope, chat.n, chat.n, time.Duration(n)*chat.span),
		s.c.OweSlots(ctx, all.scope, all.n, n-1, all.span))
}
