package telegram

import (
	"context"
	"fmt"
	"testing"
	"time"
)

// clockAt is a limiter clock that tests move by hand.
type clockAt struct{ t time.Time }

func (c *clockAt) now() time.Time          { return c.t }
func (c *clockAt) advance(d time.Duration) { c.t = c.t.Add(d) }

func TestLimiterForgetsIdleChatsOnly(t *testing.T) {
	t.Parallel()
	clock := &clockAt{t: time.Now()}
	l := NewLimiter(DefaultLimits)
	l.now = clock.now
	// A long-running bot has written to many chats, each once, a minute ago.
	for i := range minSweep - 1 {
		w := l.chatLocked(fmt.Sprint(i))
		w.done = append(w.done, clock.t.Add(-time.Minute))
	}
	// One chat has just been written to: its next message must still wait.
	done, err := l.Wait(context.Background(), "busy")
	if err != nil {
		t.Fatal(err)
	}
	done()
	if len(l.chats) != minSweep {
		t.Fatalf("chats = %d before the sweep, want %d", len(l.chats), minSweep)
	}
	l.chatLocked("new") // the map is full: idle chats go
	if _, ok := l.chats["busy"]; !ok || len(l.chats) != 2 {
		t.Fatalf("after the sweep %d chats remain (busy kept: %v), want busy and new", len(l.chats), ok)
	}
	clock.advance(500 * time.Millisecond)
	if wait := l.chatLocked("busy").wait(clock.now()); wait != 500*time.Millisecond {
		t.Errorf("the busy chat's next message may go in %v, want 500ms: its window was reset", wait)
	}
}

// TestChatSpacedFromTheAnswer: a chat's next message waits for the answer to the
// one before and then a whole second, so a late answer (a slow network, a request
// that reached Telegram late) moves it on.
func TestChatSpacedFromTheAnswer(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name     string
		answered time.Duration // after the send left; negative: not yet
		at       time.Duration // when the next message is asked for
		want     time.Duration // its wait; -1: until the answer comes
	}{
		{"in flight", -1, 2 * time.Second, -1},
		{"fast answer", 10 * time.Millisecond, 0, 1010 * time.Millisecond},
		{"late answer", 400 * time.Millisecond, 500 * time.Millisecond, 900 * time.Millisecond},
		{"a second after the answer", 400 * time.Millisecond, 1400 * time.Millisecond, 0},
	} {
		t.Run(tc.name, func(t *testing.T) {
			clock := &clockAt{t: time.Now()}
			start := clock.t
			l := NewLimiter(DefaultLimits)
			l.now = clock.now
			done, err := l.Wait(context.Background(), "222")
			if err != nil {
				t.Fatal(err)
			}
			if tc.answered >= 0 {
				clock.t = start.Add(tc.answered)
				done()
			}
			clock.t = start.Add(tc.at)
			if got := l.chatLocked("222").wait(clock.now()); got != tc.want {
				t.Errorf("next message waits %v, want %v", got, tc.want)
			}
		})
	}
}

// TestOverallCountsFromAnswers: the 31st send within a second waits until one of
// the 30 before it has been answered for a second, however early they were sent.
func TestOverallCountsFromAnswers(t *testing.T) {
	t.Parallel()
	clock := &clockAt{t: time.Now()}
	l := NewLimiter(Limits{Overall: 1000, InSecond: 30, PerChat: 1, PerGroup: 1, ChatBurst: 1})
	l.now = clock.now
	var dones []func()
	for i := range 30 {
		done, err := l.Wait(context.Background(), fmt.Sprint(i))
		if err != nil {
			t.Fatal(err)
		}
		dones = append(dones, done)
	}
	if got := l.second.wait(clock.now()); got != -1 {
		t.Fatalf("31st send with 30 in flight waits %v, want -1 (until an answer)", got)
	}
	clock.advance(300 * time.Millisecond)
	dones[0]()
	clock.advance(200 * time.Millisecond)
	dones[1]()
	if got := l.second.wait(clock.now()); got != 800*time.Millisecond {
		t.Errorf("31st send waits %v, want 800ms: a second after the first answer", got)
	}
}

func TestSpareSendsLeaveHalfTheBurst(t *testing.T) {
	t.Parallel()
	clock := &clockAt{t: time.Now()}
	l := NewLimiter(Limits{Overall: 4, InSecond: 100, PerChat: 1000, PerGroup: 1000, ChatBurst: 10})
	l.now = clock.now
	took := trySpares(l, 10)
	if took != 2 {
		t.Errorf("spare sends = %d of a burst of 4, want 2", took)
	}
	done, wait := l.TrySpare("x")
	if done != nil || wait != 250*time.Millisecond {
		t.Errorf("TrySpare = %v, %v; want nil, 250ms (one token at 4/s)", done != nil, wait)
	}
	// What is left is everyone else's: two sends go without waiting.
	for range 2 {
		if !l.overall.AllowN(clock.now(), 1) {
			t.Fatal("a send waited behind spare sends")
		}
	}
}

// trySpares asks n spare sends, each to a chat of its own and answered at
// once, and returns how many went.
func trySpares(l *Limiter, n int) int {
	took := 0
	for i := range n {
		if done, _ := l.TrySpare(fmt.Sprint(i)); done != nil {
			took++
			done()
		}
	}
	return took
}

// Spare sends leave more than half of the sends Telegram may receive within a
// second to everything else, as they do the overall rate's burst: refusals to
// strangers stop at half of them, and a commit after them goes at once rather
// than waiting a second for the refusals' places to lapse.
func TestSpareSendsLeaveHalfTheSecond(t *testing.T) {
	t.Parallel()
	clock := &clockAt{t: time.Now()}
	l := NewLimiter(Limits{Overall: 1000, InSecond: 4, PerChat: 1000, PerGroup: 1000, ChatBurst: 10})
	l.now = clock.now
	took := trySpares(l, 10)
	if took != 2 {
		t.Errorf("spare sends = %d of 4 a second, want 2", took)
	}
	if wait := l.second.wait(clock.now()); wait != 0 {
		t.Fatalf("a commit after the spare sends waits %v for the second's places, want 0", wait)
	}
	for i := range 2 { // what is left is everyone else's
		done, err := l.Wait(context.Background(), fmt.Sprint("commit", i))
		if err != nil {
			t.Fatal(err)
		}
		done()
	}
}
