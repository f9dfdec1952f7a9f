package operator

import (
	"context"
	"time"

	"github.com/countersign/countersign/journal"
	"github.com/countersign/countersign/verifier"
)

// History is the verifier's read-only view of the journal: what was sent, may
// have been sent, or waits for approval, by target.
type History struct{ Journal *journal.Journal }

var _ verifier.History = History{}

// Recent implements verifier.History.
func (h History) Recent(ctx context.Context, target string, since time.Time) ([]verifier.Sent, error) {
	ops, err := h.Journal.Operations(ctx, journal.Filter{Target: target, Since: since, States: []journal.State{
		journal.AwaitingApproval, journal.Approved, journal.Committing, journal.RetryWait, journal.Committed, journal.Unknown}})
	if err != nil {
		return nil, err
	}
	sent := make([]verifier.Sent, len(ops))
	for i, op := range ops {
		sent[i] = verifier.Sent{OperationID: op.ID, Text: op.Payload.Text, ParseMode: op.Payload.ParseMode, State: string(op.State), At: op.Created}
	}
	return sent, nil
}
