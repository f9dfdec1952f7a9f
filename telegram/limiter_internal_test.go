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
