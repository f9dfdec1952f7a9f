package telegram

import (
	"context"
	"math"
	"slices"
	"strings"
	"sync"
	"time"

	"golang.org/x/time/rate"

	"github.com/countersign/countersign/internal/stages"
)

// Limits are the send rates the limiter keeps under. Telegram documents about 30
// messages a second overall, about one a second in one chat, and 20 a minute in one
// group or channel; beyond them it answers 429.
type Limits struct {
	// Overall is the steady rate over all chats, with a burst of as many.
	Overall rate.Limit
	// InSecond is the most sends Telegram may receive within any one second
	// (default: Overall, rounded up), counted from the responses of earlier sends.
	InSecond int
	// PerChat and PerGroup are the rates within one private chat, and within one
	// group or channel; ChatBurst is how many may go to one chat at once.
	PerChat   rate.Limit
	PerGroup  rate.Limit
	ChatBurst int
}

// DefaultLimits keep under Telegram's documented limits whatever the network does
// to a request on its way: a send to a chat leaves no sooner than a second after
// the response to the one before it came back, so it cannot reach Telegram within
// a second of it, however early it was sent or late the earlier one arrived (the
// round trip is the margin); and no more than 30 sends can reach Telegram within
// any second, counted the same way. The overall rate keeps a margin of its own
// under Telegram's "about 30 a second", because that figure is not exact.
var DefaultLimits = Limits{Overall: 28, InSecond: 30, PerChat: 1, PerGroup: rate.Every(3200 * time.Millisecond), ChatBurst: 1}

// Limiter spaces sends so that Telegram's limits are rarely reached. A send takes
// a slot (Wait, TrySpare) before it leaves and gives it back, with the time its
// answer came, when it is over. Among replicas it also takes slots its journal's
// replicas share (shared.go), since the limits are the bot's, not the process's.
// It is safe for concurrent use.
type Limiter struct {
	limits  Limits
	overall *rate.Limiter
	mu      sync.Mutex
	second  window // all chats: at most InSecond within a second
	chats   map[string]*window
	changed chan struct{} // closed when a send gives its slot back
	// sweepAt is the number of chats at which idle ones are forgotten, so that a
	// bot writing to many chats over months keeps only the busy ones in memory.
	sweepAt int
	now     func() time.Time
	shared  *shared // set by share: the budget this process's replicas keep together (shared.go)
}

// minSweep is the fewest chats worth sweeping for.
const minSweep = 1024

// NewLimiter returns a limiter for l.
func NewLimiter(l Limits) *Limiter {
	if l.InSecond <= 0 {
		l.InSecond = max(1, int(math.Ceil(float64(l.Overall))))
	}
	return &Limiter{limits: l, overall: rate.NewLimiter(l.Overall, max(1, int(l.Overall))),
		second: window{n: l.InSecond, span: time.Second}, chats: map[string]*window{},
		changed: make(chan struct{}), sweepAt: minSweep, now: time.Now}
}

// window admits at most n sends within any span as Telegram receives them. A
// send holds its place from when it is admitted until span after its response
// came back: Telegram received it before it answered, so a send admitted later
// reaches Telegram more than span after it, whatever the network's delays. (A
// request that timed out counts from its timeout: a request cannot linger in the
// network for that long.)
type window struct {
	n    int
	span time.Duration
	open int         // admitted, not yet answered
	done []time.Time // answers within the last span, oldest first
}

// wait is how long until w admits a send at now: 0 when it does, -1 when only an
// answer to a send in flight can make room.
func (w *window) wait(now time.Time) time.Duration { return w.waitFree(now, 1) }

// waitFree is how long until w has k places free at now: 0 when it has, -1
// when only an answer to a send in flight can make room.
func (w *window) waitFree(now time.Time, k int) time.Duration {
	w.forget(now)
	excess := w.open + len(w.done) - w.n + k
	switch {
	case excess <= 0:
		return 0
	case excess > len(w.done):
		return -1
	}
	return w.done[excess-1].Add(w.span).Sub(now)
}

func (w *window) forget(now time.Time) {
	k := 0
	for k < len(w.done) && !w.done[k].Add(w.span).After(now) {
		k++
	}
	w.done = w.done[k:]
}

// answered gives back a send's place: it lapses span after at.
func (w *window) answered(at time.Time) {
	w.open--
	w.lapse(at)
}

// lapse holds a place until span after at, in time order: a place owed for
// an album's items may lie ahead of a later answer.
func (w *window) lapse(at time.Time) {
	i, _ := slices.BinarySearchFunc(w.done, at, time.Time.Compare)
	w.done = slices.Insert(w.done, i, at)
}

// idle says w admits exactly what a new window would.
func (w *window) idle(now time.Time) bool {
	w.forget(now)
	return w.open == 0 && len(w.done) == 0
}

// Wait blocks until a message to target may go, or ctx ends. The send must call
// done, once, when it is over (answered, failed or timed out): a chat's next
// message waits for it.
func (l *Limiter) Wait(ctx context.Context, target string) (done func(), err error) {
	chat, err := l.admit(ctx, func() *window { return l.chatLocked(target) })
	if err != nil {
		return nil, err
	}
	stages.Mark(ctx, stages.Paced) // the chat's own pacing: Telegram's limit in one chat
	if err := l.overall.Wait(ctx); err != nil {
		l.withdraw(chat)
		return nil, err
	}
	stages.Mark(ctx, stages.Rated)
	if !l.sharing() {
		if _, err := l.admit(ctx, func() *window { return &l.second }); err != nil {
			l.withdraw(chat)
			return nil, err
		}
		stages.Mark(ctx, stages.Admitted)
		return l.doneFunc(chat, &l.second), nil
	}
	// Among replicas the bot's pool in the journal keeps the rule of l.second
	// for all of them, and l.second is left out: a place in it held while the
	// send waits for the pool would queue this process's sends a second time,
	// in no order, and hold up the line the pool keeps in order.
	chatPool, allPool := l.pools(target)
	got, _, err := l.shared.take(ctx, chatPool, allPool, false)
	if err != nil {
		l.withdraw(chat)
		return nil, err
	}
	stages.Mark(ctx, stages.Admitted)
	return l.sharedDone(chat, got), nil
}

// sharedDone is the done of a send admitted to chat and the overall window
// here, and to got in the journal.
func (l *Limiter) sharedDone(chat *window, got slots) func() {
	local := l.doneFunc(chat)
	var once sync.Once
	return func() {
		once.Do(func() {
			local()
			l.shared.done(got)
		})
	}
}

// admit waits until the window pick returns (under l.mu) admits a send, and
// takes its place.
func (l *Limiter) admit(ctx context.Context, pick func() *window) (*window, error) {
	for {
		l.mu.Lock()
		w := pick()
		wait := w.wait(l.now())
		if wait == 0 {
			w.open++
			l.mu.Unlock()
			return w, nil
		}
		changed := l.changed
		l.mu.Unlock()
		if err := sleepUntilChange(ctx, wait, changed); err != nil {
			return nil, err
		}
	}
}

// sleepUntilChange waits d (for ever when d < 0), until changed is closed, or
// until ctx ends.
func sleepUntilChange(ctx context.Context, d time.Duration, changed <-chan struct{}) error {
	var timer <-chan time.Time
	if d > 0 {
		t := time.NewTimer(d)
		defer t.Stop()
		timer = t.C
	}
	select {
	case <-timer:
	case <-changed:
	case <-ctx.Done():
		return ctx.Err()
	}
	return nil
}

// doneFunc is the done of a send admitted to the windows ws.
func (l *Limiter) doneFunc(ws ...*window) func() {
	var once sync.Once
	return func() {
		once.Do(func() {
			l.mu.Lock()
			defer l.mu.Unlock()
			now := l.now()
			for _, w := range ws {
				w.answered(now)
			}
			l.changedLocked()
		})
	}
}

// Spend records that a send to target, answered just now, was n messages (an
// album): Telegram counts each against its limits, so the next sends wait as
// if the others had gone one after another behind it, in the chat, and in
// the overall limits at once.
func (l *Limiter) Spend(target string, n int) {
	if n <= 1 {
		return
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	now := l.now()
	chat := l.chatLocked(target)
	for k := 1; k < n; k++ {
		chat.lapse(now.Add(time.Duration(k) * chat.span))
		if !l.sharing() {
			l.second.lapse(now) // among replicas, the bot's pool owes them (below)
		}
	}
	l.overall.ReserveN(now, n-1) // the overall rate's tokens, owed
	l.changedLocked()
	if l.sharing() {
		chatPool, allPool := l.pools(target)
		_ = l.shared.spend(chatPool, allPool, n) // best effort: Telegram answers an album it counts otherwise with a 429
	}
}

// withdraw gives back the places in ws that no send used.
func (l *Limiter) withdraw(ws ...*window) {
	l.mu.Lock()
	defer l.mu.Unlock()
	for _, w := range ws {
		w.open--
	}
	l.changedLocked()
}

// changedLocked wakes every waiter to look again.
func (l *Limiter) changedLocked() {
	close(l.changed)
	l.changed = make(chan struct{})
}

// TrySpare takes a send to target only if it may go now and leaves at least half
// of the overall burst, and of the sends Telegram may receive within a second,
// for everything else, so that a message of low priority (a
// stranger's refusal) never makes a card or a commit wait. When it takes one it
// returns the send's done (see Wait); otherwise nil and how long until it might.
// Among replicas, the bot's pool in the journal must have more than half its
// slots free too.
func (l *Limiter) TrySpare(target string) (done func(), wait time.Duration) {
	chat, wait := l.trySpareHere(target)
	if chat == nil {
		return nil, wait
	}
	if !l.sharing() {
		return l.doneFunc(chat, &l.second), 0
	}
	chatPool, allPool := l.pools(target)
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	got, ok, err := l.shared.take(ctx, chatPool, allPool, true)
	if err != nil || !ok {
		l.withdraw(chat)
		return nil, spareRetry
	}
	return l.sharedDone(chat, got), 0
}

// spareRetry is how long a spare send waits before it asks the replicas'
// shared budget again, after it found too few slots free there.
const spareRetry = 250 * time.Millisecond

// trySpareHere is TrySpare's decision by this process's windows: the chat's
// window the send took a place in, or nil and how long until it might.
func (l *Limiter) trySpareHere(target string) (*window, time.Duration) {
	l.mu.Lock() // one spare send decided at a time, and no other send admitted meanwhile
	defer l.mu.Unlock()
	chat := l.chatLocked(target)
	now := l.now()
	need := float64(l.overall.Burst()/2 + 1)
	wait := until(l.overall, now, need)
	ws := []*window{chat}
	free := []int{1}
	if !l.sharing() {
		// More than half of the places of any second left free, as of the
		// overall rate's burst: spare sends never take the places a commit or
		// a card would then wait for. Among replicas, the bot's pool in the
		// journal keeps the same rule (shared.take).
		ws, free = append(ws, &l.second), append(free, l.second.n/2+1)
	}
	for i, w := range ws {
		w := w.waitFree(now, free[i])
		if w < 0 {
			w = 10 * time.Millisecond // a send in flight must answer first
		}
		wait = max(wait, w)
	}
	if wait > 0 {
		return nil, wait
	}
	if !l.overall.AllowN(now, 1) {
		return nil, until(l.overall, now, need)
	}
	for _, w := range ws {
		w.open++
	}
	return chat, 0
}

// until is how long r needs to hold n tokens, from now.
func until(r *rate.Limiter, now time.Time, n float64) time.Duration {
	short := n - r.TokensAt(now)
	if short <= 0 {
		return 0
	}
	if r.Limit() <= 0 {
		return time.Hour
	}
	return time.Duration(short / float64(r.Limit()) * float64(time.Second))
}

// chatLocked is target's window, made on first use; l.mu is held.
func (l *Limiter) chatLocked(target string) *window {
	if c, ok := l.chats[target]; ok {
		return c
	}
	limit := l.chatLimit(target)
	if len(l.chats) >= l.sweepAt {
		l.forgetIdle()
		l.sweepAt = max(minSweep, 2*len(l.chats)) // amortized: a sweep per doubling
	}
	burst := max(1, l.limits.ChatBurst)
	c := &window{n: burst, span: spanOf(limit, burst)}
	l.chats[target] = c
	return c
}

// chatLimit is the rate within target: PerChat, or PerGroup when slower for a
// group or channel.
func (l *Limiter) chatLimit(target string) rate.Limit {
	if strings.HasPrefix(target, "-") || strings.HasPrefix(target, "@") {
		return min(l.limits.PerChat, l.limits.PerGroup) // groups and channels
	}
	return l.limits.PerChat
}

// spanOf is the span in which a window of n sends keeps to limit.
func spanOf(limit rate.Limit, n int) time.Duration {
	if limit <= 0 {
		return time.Hour
	}
	return time.Duration(float64(n) / float64(limit) * float64(time.Second))
}

// forgetIdle drops the chats whose window is idle: it admits exactly what a new
// one would, so forgetting it changes no send's timing.
func (l *Limiter) forgetIdle() {
	now := l.now()
	for target, c := range l.chats {
		if c.idle(now) {
			delete(l.chats, target)
		}
	}
}
