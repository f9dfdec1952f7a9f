package standin

import (
	"math"
	"time"
)

// FloodLimits emulates Telegram's flood control on the methods that post
// messages (sendMessage, sendPhoto, sendDocument, sendPoll, copyMessage,
// forwardMessage; a sendMediaGroup counts as its items) (Bots FAQ,
// "Broadcasting to users"): about 30 messages per second overall, about
// one per second in a chat after a short burst, and at most 20 per minute
// in a group or channel (chat id < 0). A message over a limit is refused
// with 429 and a retry_after in seconds. Zero fields take the defaults.
type FloodLimits struct {
	// PerSecond is the overall rate and burst; default 30.
	PerSecond float64
	// PerChatPerSecond is the steady rate within one chat; default 1.
	PerChatPerSecond float64
	// ChatBurst is how many messages a chat may get at once; default 3.
	ChatBurst int
	// GroupPerMinute caps messages to one group or channel in any 60 s;
	// default 20.
	GroupPerMinute int
}

func (f FloodLimits) withDefaults() FloodLimits {
	if f.PerSecond <= 0 {
		f.PerSecond = 30
	}
	if f.PerChatPerSecond <= 0 {
		f.PerChatPerSecond = 1
	}
	if f.ChatBurst <= 0 {
		f.ChatBurst = 3
	}
	if f.GroupPerMinute <= 0 {
		f.GroupPerMinute = 20
	}
	return f
}

// bucket is a token bucket; it starts full.
type bucket struct {
	tokens float64
	last   time.Time
	primed bool
}

// wait refills the bucket and returns how long until it holds a token.
func (b *bucket) wait(now time.Time, rate, burst float64) time.Duration {
	if !b.primed {
		b.tokens, b.last, b.primed = burst, now, true
	}
	if elapsed := now.Sub(b.last).Seconds(); elapsed > 0 {
		b.tokens = math.Min(burst, b.tokens+elapsed*rate)
		b.last = now
	}
	if b.tokens >= 1 {
		return 0
	}
	return time.Duration((1 - b.tokens) / rate * float64(time.Second))
}

// window counts events in a sliding time span.
type window struct{ times []time.Time }

// wait forgets events older than span and returns how long until fewer
// than limit remain in it.
func (w *window) wait(now time.Time, limit int, span time.Duration) time.Duration {
	for len(w.times) > 0 && !w.times[0].Add(span).After(now) {
		w.times = w.times[1:]
	}
	if len(w.times) < limit {
		return 0
	}
	return w.times[len(w.times)-limit].Add(span).Sub(now)
}

// limiter applies FloodLimits.
type limiter struct {
	limits FloodLimits
	global bucket
	chats  map[int64]*bucket
	groups map[int64]*window
}

func newLimiter(f FloodLimits) *limiter {
	return &limiter{limits: f.withDefaults(), chats: map[int64]*bucket{}, groups: map[int64]*window{}}
}

// admit takes n messages for chatID at now, or returns how long the sender
// must wait when a limit is reached (nothing is taken then). A batch (a media
// group) goes through when one message would, and all its items are charged:
// the buckets go into debt, so what follows waits longer.
func (l *limiter) admit(chatID int64, now time.Time, n int) time.Duration {
	chat := l.chats[chatID]
	if chat == nil {
		chat = &bucket{}
		l.chats[chatID] = chat
	}
	wait := max(
		l.global.wait(now, l.limits.PerSecond, l.limits.PerSecond),
		chat.wait(now, l.limits.PerChatPerSecond, float64(l.limits.ChatBurst)),
	)
	var group *window
	if chatID < 0 {
		if group = l.groups[chatID]; group == nil {
			group = &window{}
			l.groups[chatID] = group
		}
		wait = max(wait, group.wait(now, l.limits.GroupPerMinute, time.Minute))
	}
	if wait > 0 {
		return wait
	}
	l.global.tokens -= float64(n)
	chat.tokens -= float64(n)
	for range n {
		if group != nil {
			group.times = append(group.times, now)
		}
	}
	return 0
}

// floodLocked applies the flood limits to n messages for chatID.
func (s *Server) floodLocked(chatID int64, n int) *apiError {
	if s.limiter == nil {
		return nil
	}
	wait := s.limiter.admit(chatID, s.now(), n)
	if wait <= 0 {
		return nil
	}
	s.rejected++
	return new(tooManyRequests(max(1, int(math.Ceil(wait.Seconds())))))
}

// FloodRejections counts the 429 replies the flood limits sent.
func (s *Server) FloodRejections() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.rejected
}
