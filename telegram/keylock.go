package telegram

import (
	"context"
	"sync"
)

// keyLock is a mutex per key: the cards of one approval are all sent and recorded
// before a tap on one of them is acted on, so that every copy gets edited.
type keyLock struct {
	mu    sync.Mutex
	locks map[string]*keyEntry
}

type keyEntry struct {
	mu   sync.Mutex
	refs int
}

// lock locks key and returns its unlock.
func (k *keyLock) lock(key string) func() {
	k.mu.Lock()
	if k.locks == nil {
		k.locks = map[string]*keyEntry{}
	}
	e := k.locks[key]
	if e == nil {
		e = &keyEntry{}
		k.locks[key] = e
	}
	e.refs++
	k.mu.Unlock()
	e.mu.Lock()
	return func() {
		e.mu.Unlock()
		k.mu.Lock()
		if e.refs--; e.refs == 0 {
			delete(k.locks, key)
		}
		k.mu.Unlock()
	}
}

// replies counts, per chat, the requests whose replies are not out yet. A card
// for that chat waits for them (afterReplies), so that the card a request asked
// for comes after the reply to it, without ever holding up a request: a /stop
// goes ahead while a model's turn runs in the same chat.
type replies struct {
	mu    sync.Mutex
	chats map[int64]*replying
}

type replying struct {
	n    int
	done chan struct{} // closed when n comes back to zero
}

// begin counts a request in chat until end is called, once its reply is out.
func (r *replies) begin(chat int64) (end func()) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.chats == nil {
		r.chats = map[int64]*replying{}
	}
	c := r.chats[chat]
	if c == nil {
		c = &replying{done: make(chan struct{})}
		r.chats[chat] = c
	}
	c.n++
	var once sync.Once
	return func() {
		once.Do(func() {
			r.mu.Lock()
			defer r.mu.Unlock()
			if c.n--; c.n == 0 {
				close(c.done)
				delete(r.chats, chat)
			}
		})
	}
}

// afterReplies returns once no request in chat waits for its reply, or ctx ends.
func (r *replies) afterReplies(ctx context.Context, chat int64) error {
	r.mu.Lock()
	c := r.chats[chat]
	r.mu.Unlock()
	if c == nil {
		return nil
	}
	select {
	case <-c.done:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}

// inOrder hands out, per key, tickets in the order they are taken: each waits
// for the one taken before it to be done. The cards of one task are shown in the
// order the operator asked for them, though each is shown by a goroutine of its
// own.
type inOrder struct {
	mu   sync.Mutex
	last map[string]chan struct{}
}

// take returns the ticket for key: ready is closed once the ticket before it is
// done; done must be called once the work is over, shown or not.
func (q *inOrder) take(key string) (ready <-chan struct{}, done func()) {
	q.mu.Lock()
	defer q.mu.Unlock()
	if q.last == nil {
		q.last = map[string]chan struct{}{}
	}
	prev := q.last[key]
	if prev == nil {
		prev = make(chan struct{})
		close(prev)
	}
	mine := make(chan struct{})
	q.last[key] = mine
	return prev, func() {
		close(mine)
		q.mu.Lock()
		defer q.mu.Unlock()
		if q.last[key] == mine {
			delete(q.last, key)
		}
	}
}
