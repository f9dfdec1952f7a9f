package telegram

import (
	"sync"
	"testing"
	"time"
)

// A chat has at most half the workers; its messages beyond them wait in its
// backlog and go, in the order they came, to its workers as they finish;
// another chat is free meanwhile; a chat whose backlog is full makes the
// worker that brings one more wait for room, and stop ends that wait.
func TestChatTurns(t *testing.T) {
	c := newChatTurns(4)
	msg := func(n int) job { return job{tries: n} }
	if !c.begin(1, msg(0)) || !c.begin(1, msg(1)) {
		t.Fatal("a chat's first two messages of four workers: begin = false, want a worker each")
	}
	if c.begin(1, msg(2)) || c.begin(1, msg(3)) {
		t.Fatal("a chat with half the workers: begin = true, want the message in its backlog")
	}
	if !c.begin(2, msg(0)) {
		t.Fatal("another chat: begin = false, want it free meanwhile")
	}
	for want := 2; want <= 3; want++ {
		if j, ok := c.next(1); !ok || j.tries != want {
			t.Fatalf("next = %d, %v; want message %d", j.tries, ok, want)
		}
	}
	if _, ok := c.next(1); ok {
		t.Fatal("next of an empty backlog = true, want the worker's place let go")
	}
	if !c.begin(1, msg(4)) {
		t.Fatal("a place let go: begin = false, want it taken")
	}
	if one := newChatTurns(1); !one.begin(1, msg(0)) || one.begin(1, msg(1)) {
		t.Fatal("one worker: want a chat to have it, one message at a time")
	}

	for i := range maxBacklog {
		c.begin(1, msg(i))
	}
	var wg sync.WaitGroup
	waited := make(chan bool, 2)
	for range 2 {
		wg.Go(func() { waited <- c.begin(1, msg(-1)) })
	}
	select {
	case got := <-waited:
		t.Fatalf("a message beyond a full backlog: begin = %v at once, want it to wait for room", got)
	case <-time.After(50 * time.Millisecond):
	}
	if _, ok := c.next(1); !ok {
		t.Fatal("next of a full backlog = false")
	}
	if got := <-waited; got {
		t.Fatal("the message given room: begin = true, want it left in the backlog")
	}
	c.stop()
	wg.Wait()
	if got := <-waited; got {
		t.Fatal("the message waiting at stop: begin = true, want it left to the inbox")
	}
}
