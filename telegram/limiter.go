package telegram

import (
	"context"
	"strings"
	"sync"
	"time"

	"golang.org/x/time/rate"
)

// Limits are the send rates the limiter keeps under. Telegram documents about 30
// messages a second overall, about one a second in one chat, and 20 a minute in one
// group or channel; beyond them it answers 429.
type Limits struct {
	Overall   rate.Limit
	PerChat   rate.Limit
	PerGroup  rate.Limit
	ChatBurst int
}

// DefaultLimits keep a margin under Telegram's documented limits, because a send
// spaced exactly one second after the last can arrive a hair early and earn a 429.
var DefaultLimits = Limits{Overall: 28, PerChat: rate.Every(1100 * time.Millisecond), PerGroup: rate.Every(3200 * time.Millisecond), ChatBurst: 1}

// Limiter spaces sends so that Telegram's limits are rarely reached. It is safe
// for concurrent use.
type Limiter struct {
	limits  Limits
	overall *rate.Limiter
	mu      sync.Mutex
	chats   map[string]*rate.Limiter
	// sweepAt is the number of chats at which idle ones are forgotten, so that a
	// bot writing to many chats over months keeps only the busy ones in memory.
	sweepAt int
	now     func() time.Time
}

// minSweep is the fewest chats worth sweeping for.
const minSweep = 1024

// NewLimiter returns a limiter for l.
func NewLimiter(l Limits) *Limiter {
	return &Limiter{limits: l, overall: rate.NewLimiter(l.Overall, max(1, int(l.Overall))), chats: map[string]*rate.Limiter{},
		sweepAt: minSweep, now: time.Now}
}

// Wait blocks until a message to target may go, or ctx ends.
func (l *Limiter) Wait(ctx context.Context, target string) error {
	if err := l.chat(target).Wait(ctx); err != nil {
		return err
	}
	return l.overall.Wait(ctx)
}

// TrySpare takes a send to target only if it may go now and leaves at least half
// of the overall burst for everything else, so that a message of low priority (a
// stranger's refusal) never makes a card or a commit wait. When it takes none it
// returns false and how long until it might.
func (l *Limiter) TrySpare(target string) (bool, time.Duration) {
	chat := l.chat(target)
	l.mu.Lock() // one spare send decided at a time; Wait takes no lock
	defer l.mu.Unlock()
	now := l.now()
	need := float64(l.overall.Burst()/2 + 1)
	wait := max(until(l.overall, now, need), until(chat, now, 1))
	if wait > 0 {
		return false, wait
	}
	if !chat.AllowN(now, 1) {
		return false, until(chat, now, 1)
	}
	if !l.overall.AllowN(now, 1) {
		return false, until(l.overall, now, need)
	}
	return true, 0
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

func (l *Limiter) chat(target string) *rate.Limiter {
	l.mu.Lock()
	defer l.mu.Unlock()
	if c, ok := l.chats[target]; ok {
		return c
	}
	limit := l.limits.PerChat
	if strings.HasPrefix(target, "-") || strings.HasPrefix(target, "@") {
		limit = min(limit, l.limits.PerGroup) // groups and channels
	}
	if len(l.chats) >= l.sweepAt {
		l.forgetIdle()
		l.sweepAt = max(minSweep, 2*len(l.chats)) // amortized: a sweep per doubling
	}
	c := rate.NewLimiter(limit, max(1, l.limits.ChatBurst))
	l.chats[target] = c
	return c
}

// forgetIdle drops the chats whose limiter has refilled: it allows exactly what a
// new one would, so forgetting it changes no send's timing.
func (l *Limiter) forgetIdle() {
	now := l.now()
	for target, c := range l.chats {
		if c.TokensAt(now) >= float64(c.Burst()) {
			delete(l.chats, target)
		}
	}
}
