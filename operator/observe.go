package operator

import (
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
