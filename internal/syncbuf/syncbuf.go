// Package syncbuf is a bytes.Buffer that many goroutines may write while a test
// reads it: the log of a bot under test, written by its workers and searched for a
// leaked secret or an expected line.
package syncbuf

import (
	"bytes"
	"sync"
)

// Buffer collects writes under a lock. The zero value is ready to use.
type Buffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

// Write appends p.
func (b *Buffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.b.Write(p)
}

// String is everything written so far.
func (b *Buffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.b.String()
}
