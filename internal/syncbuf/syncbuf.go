// Package syncbuf is a bytes.Buffer that many goroutines may write while a test
// reads it: the log of a bot under test, written by its workers and searched for a
// leaked secret or an expected line, or the screen of a command a test types into,
// waited on until it shows what the test expects.
package syncbuf

import (
	"bytes"
	"context"
	"fmt"
	"sync"
)

// Buffer collects writes under a lock. The zero value is ready to use.
type Buffer struct {
	mu      sync.Mutex
	b       bytes.Buffer
	changed chan struct{} // closed and replaced by every write; nil until a wait needs it
}

// Write appends p.
func (b *Buffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.changed != nil {
		close(b.changed)
		b.changed = nil
	}
	return b.b.Write(p)
}

// String is everything written so far.
func (b *Buffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.b.String()
}

// WaitFor blocks until cond holds for everything written so far, checked now and
// after every write, and returns nil; or until ctx ends, and returns its error,
// wrapped with what was written.
func (b *Buffer) WaitFor(ctx context.Context, cond func(string) bool) error {
	for {
		b.mu.Lock()
		text := b.b.String()
		if b.changed == nil {
			b.changed = make(chan struct{})
		}
		changed := b.changed
		b.mu.Unlock()
		if cond(text) {
			return nil
		}
		select {
		case <-changed:
		case <-ctx.Done():
			return fmt.Errorf("syncbuf: condition not met by %q: %w", text, ctx.Err())
		}
	}
}
