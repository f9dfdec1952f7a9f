package telegram

import "sync"

// chatTurns keeps the messages of one chat to at most half the message
// workers at a time (at least one). A worker that takes a message of a chat
// already that busy leaves it in the chat's backlog and takes the next
// update, so that a chat whose replies wait their turn in Telegram's pacing
// of it (a busy group, 20 a minute) holds half the workers, never all of
// them, and the other chats' commands go on. A chat still gets more than one
// worker where there are two: a /stop is carried out while the model's turn
// it stops runs. A worker of the chat takes its backlog, in the order it
// came, before it lets its place go.
type chatTurns struct {
	mu      sync.Mutex
	room    *sync.Cond // signalled as a backlog shrinks, and at stop
	most    int        // workers one chat may have at once
	chats   map[int64]*chatTurn
	stopped bool
}

// chatTurn is one busy chat: its workers and the messages waiting for one.
type chatTurn struct {
	workers int
	backlog []job
}

// maxBacklog is how many messages of one chat may wait for one of its
// workers; a worker that brings one more waits for room, as the lane's queue
// makes dispatch wait, so that no chat's flood piles up in memory.
const maxBacklog = laneQueue

// newChatTurns shares workers message workers among chats.
func newChatTurns(workers int) *chatTurns {
	c := &chatTurns{most: max(1, workers/2), chats: map[int64]*chatTurn{}}
	c.room = sync.NewCond(&c.mu)
	return c
}

// begin reports whether the caller is now a worker of chat, to handle j and
// then what next gives; when the chat has all the workers it may, j joins its
// backlog and begin reports false. After stop, a message that would wait for
// room is left (reported false): it stays unhandled in the inbox, for the
// replay after a restart.
func (c *chatTurns) begin(chat int64, j job) bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	for {
		t := c.chats[chat]
		if t == nil {
			t = &chatTurn{}
			c.chats[chat] = t
		}
		if t.workers < c.most {
			t.workers++
			return true
		}
		if len(t.backlog) < maxBacklog {
			t.backlog = append(t.backlog, j)
			return false
		}
		if c.stopped {
			return false
		}
		c.room.Wait()
	}
}

// next gives the caller, a worker of chat, the message waiting first in its
// backlog; when none is, the caller's place is let go and next reports false.
func (c *chatTurns) next(chat int64) (job, bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	defer c.room.Broadcast()
	t := c.chats[chat]
	if len(t.backlog) == 0 {
		if t.workers--; t.workers == 0 {
			delete(c.chats, chat)
		}
		return job{}, false
	}
	j := t.backlog[0]
	t.backlog[0] = job{}
	t.backlog = t.backlog[1:]
	return j, true
}

// stop wakes the workers waiting for room, for good: their Serve is ending.
func (c *chatTurns) stop() {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.stopped = true
	c.room.Broadcast()
}
