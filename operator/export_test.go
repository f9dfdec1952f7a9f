package operator

import (
	"context"
	"sync"
)

// SweepOnce runs one slow sweep (expiry, reminders, escalation, ...) as Sweep
// does at its start and on every tick, so that a test can count sweeps rather
// than wait on a ticker.
func (o *Operator) SweepOnce(ctx context.Context) { o.sweep(ctx) }

// WatchOnce runs one pass of the sweep's fast watch, and waits for the commits
// it started, so that a test can put a pass exactly where it wants one.
func (o *Operator) WatchOnce(ctx context.Context) {
	var runs sync.WaitGroup
	o.watch(ctx, &runs)
	runs.Wait()
}
