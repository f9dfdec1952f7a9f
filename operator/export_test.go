package operator

import "context"

// SweepOnce runs one slow sweep (expiry, reminders, escalation, ...) as Sweep
// does at its start and on every tick, so that a test can count sweeps rather
// than wait on a ticker.
func (o *Operator) SweepOnce(ctx context.Context) { o.sweep(ctx) }
