package operator

import (
	"context"
	"sync"
	"time"
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

// StillShowing renews the mark of approval id as Showing does on each tick,
// so that a test on the replicas' clock renews it where it wants.
func (o *Operator) StillShowing(ctx context.Context, id string) error {
	return o.opts.Journal.KeepShown(ctx, id, o.self)
}

// ShowingEvery is how often Showing renews a mark.
func (o *Operator) ShowingEvery() time.Duration { return o.showingEvery() }

// WriteEnvelope writes the note of operation id as an unknown outcome's own
// write does.
func (o *Operator) WriteEnvelope(ctx context.Context, id string) error {
	return o.writeEnvelope(ctx, id, "test")
}
