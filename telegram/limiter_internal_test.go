package telegram

import (
	"fmt"
	"testing"
	"time"
)

func TestLimiterForgetsIdleChatsOnly(t *testing.T) {
	start := time.Now()
	l := NewLimiter(DefaultLimits)
	l.now = func() time.Time { return start }
	// A long-running bot has written to many chats, each once, a minute ago.
	for i := range minSweep - 1 {
		l.chat(fmt.Sprint(i)).AllowN(start.Add(-time.Minute), 1)
	}
	// One chat has just been written to: its next message must still wait.
	l.chat("busy").AllowN(start, 1)
	if len(l.chats) != minSweep {
		t.Fatalf("chats = %d before the sweep, want %d", len(l.chats), minSweep)
	}
	l.chat("new") // the map is full: idle chats go
	if _, ok := l.chats["busy"]; !ok || len(l.chats) != 2 {
		t.Fatalf("after the sweep %d chats remain (busy kept: %v), want busy and new", len(l.chats), ok)
	}
	if l.chat("busy").AllowN(start.Add(500*time.Millisecond), 1) {
		t.Error("the busy chat's limiter was reset: a message went 0.5s after the last")
	}
}

func TestSpareSendsLeaveHalfTheBurst(t *testing.T) {
	start := time.Now()
	l := NewLimiter(Limits{Overall: 4, PerChat: 1000, PerGroup: 1000, ChatBurst: 10})
	l.now = func() time.Time { return start }
	took := 0
	for i := range 10 {
		if ok, _ := l.TrySpare(fmt.Sprint(i)); ok {
			took++
		}
	}
	if took != 2 {
		t.Errorf("spare sends = %d of a burst of 4, want 2", took)
	}
	ok, wait := l.TrySpare("x")
	if ok || wait != 250*time.Millisecond {
		t.Errorf("TrySpare = %v, %v; want false, 250ms (one token at 4/s)", ok, wait)
	}
	// What is left is everyone else's: two sends go without waiting.
	for range 2 {
		if !l.overall.AllowN(start, 1) {
			t.Fatal("a send waited behind spare sends")
		}
	}
}
