package operator

import (
	"context"
	"fmt"
	"time"

	"github.com/countersign/countersign/journal"
)

// Attempt is one commit attempt as it ended, as Options.Observe is told of it.
type Attempt struct {
	Operation string
	// Outcome is the state the attempt moved the operation to: committed, unknown,
	// failed, retry_wait, or approved (repaired, to be sent again).
	Outcome journal.State
	// Took is the time from the move to committing to the move out of it, on the
	// operator's clock.
	Took time.Duration
	// Interrupted: the attempt of a replica that stopped while it was sending,
	// made unknown here once its lease was past. Took is not known.
	Interrupted bool
}

// observe tells Options.Observe of the attempt a recorded move ends: a move to
// committing starts one, a move out of committing ends it.
func (o *Operator) observe(id string, m journal.Move) {
	if o.opts.Observe == nil {
		return
	}
	switch {
	case m.To == journal.Committing:
		o.attempts.Store(id, o.opts.Clock.Now())
	case m.From == journal.Committing:
		if start, ok := o.attempts.LoadAndDelete(id); ok {
			o.opts.Observe(Attempt{Operation: id, Outcome: m.To, Took: o.opts.Clock.Now().Sub(start.(time.Time))})
		}
	}
}

// ApprovalsNearExpiry counts the approvals of this operator's transport that
// nobody decided yet and that are as near their expiry as the reminder that asks
// the approvers again (a quarter of their time to live, at most an hour): what a
// process's metrics show, so that an alert and the reminder speak of the same
// approvals. It reads the journal, and returns its error.
func (o *Operator) ApprovalsNearExpiry(ctx context.Context) (int, error) {
	now := o.opts.Clock.Now()
	as, err := o.opts.Journal.Expiring(ctx, o.opts.Transport, now.Add(time.Hour))
	if err != nil {
		return 0, fmt.Errorf("operator: approvals near expiry: %w", err)
	}
	n := 0
	for _, a := range as {
		if nearExpiry(a, now) {
			n++
		}
	}
	return n, nil
}

// nearExpiry reports whether approval a is within remindBefore of its expiry at
// now.
func nearExpiry(a journal.Approval, now time.Time) bool {
	return a.Expires.Sub(now) <= remindBefore(a.Expires.Sub(a.Created))
}
