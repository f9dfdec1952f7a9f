// Package testclock is a clock a test moves by hand, which several journals
// (replicas) share as processes share time.
package testclock

import (
	"sync"
	"time"
)

// Clock is a moving clock, safe for concurrent use.
type Clock struct {
	mu sync.Mutex
	t  time.Time
}

// New returns a clock that reads at until moved.
func New(at time.Time) *Clock { return &Clock{t: at} }

// Now is the clock's time: a func() time.Time for journal.WithClock.
func (c *Clock) Now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.t
}

// Add moves the clock by d.
func (c *Clock) Add(d time.Duration) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.t = c.t.Add(d)
}
