package journal

import (
	"errors"
	"fmt"
	"slices"
)

// State is where an operation stands. The legal moves between states live in edges
// and nowhere else.
type State string

// The states of an operation.
const (
	Prepared         State = "prepared"
	Verified         State = "verified"
	AwaitingApproval State = "awaiting_approval"
	Approved         State = "approved"
	Rejected         State = "rejected"
	Expired          State = "expired"
	Committing       State = "committing"
	RetryWait        State = "retry_wait"
	Committed        State = "committed"
	Unknown          State = "unknown"
	NotDelivered     State = "not_delivered"
	Failed           State = "failed"
	Cancelled        State = "cancelled"
)

// edges is the state machine. Committing -> Approved is a repair by schema (the same
// approved payload, delivered differently); NotDelivered -> AwaitingApproval or
// Approved is a retry after a human verified that the first send did not arrive;
// Approved -> AwaitingApproval asks again when the process that sends does not
// allow the approval given (an auto-approval of another process's policy), or
// when what the payload quotes (the message, the chat) changed since it was
// approved (the payload then quotes it as it is now);
// Approved -> RetryWait and RetryWait -> RetryWait wait to read again what the
// card showed (the chat) when the read before the write ahead did not get
// through: nothing was sent;
// AwaitingApproval -> AwaitingApproval is an approver's edit of the payload,
// which voids the approval and asks one for the new payload.
var edges = map[State][]State{
	"":               {Prepared},
	Prepared:         {Verified, Failed, Cancelled},
	Verified:         {AwaitingApproval, Approved, Failed, Cancelled},
	AwaitingApproval: {Approved, Rejected, Expired, Cancelled, AwaitingApproval},
	Approved:         {Committing, AwaitingApproval, Failed, Cancelled, RetryWait},
	Committing:       {Committed, Unknown, Failed, RetryWait, Approved},
	RetryWait:        {Committing, Failed, Cancelled, RetryWait},
	Unknown:          {Committed, NotDelivered, Committing},
	NotDelivered:     {AwaitingApproval, Approved, Cancelled},
}

// CanMove reports whether from -> to is a legal transition.
func CanMove(from, to State) bool { return slices.Contains(edges[from], to) }

// liveState is the condition of the operations_live index, word for word
// (migrations sqlite/0020_fewer_pages.sql, postgres/0017_live_indexes.sql):
// the operations still in play. A query that reads operations by a state in
// play carries it beside its own state filter, since a planner uses a partial
// index only for a query whose condition implies the index's, and
// PostgreSQL's generic plan cannot see that "state = $1" does.
// It says "<>" five times rather than NOT IN: SQLite evaluates the condition
// for the old and the new row of every move, and a NOT IN of five made each
// move's update cost several times as much as the update itself (a list is
// built to look the state up in). TestLiveStateIsTheIndexCondition holds it
// to the migrations and to Final.
const liveState = "state <> 'committed' AND state <> 'rejected' AND state <> 'expired' AND state <> 'failed' AND state <> 'cancelled'"

// rejectedState is the condition of the operations_rejected index, word for
// word: a query for the rejected operations alone carries it, as liveState.
const rejectedState = "state = 'rejected'"

// Final reports whether nothing more will happen to an operation in s on its own.
func (s State) Final() bool {
	switch s {
	case Committed, Rejected, Expired, Failed, Cancelled:
		return true
	}
	return false
}

// Errors of the journal.
var (
	ErrNotFound          = errors.New("not found")
	ErrIllegalTransition = errors.New("illegal transition")
	// ErrStateChanged means another writer moved the operation first.
	ErrStateChanged = errors.New("operation state changed")
	// ErrDecided means the approval was already decided: the first decision won.
	ErrDecided = errors.New("approval already decided")
	// ErrExpired means the approval expired before the decision.
	ErrExpired = errors.New("approval expired")
	// ErrDuplicate means a task with the same origin exists: the request was seen.
	ErrDuplicate     = errors.New("already recorded")
	ErrRetryBudget   = errors.New("retry budget spent")
	ErrWaitBudget    = errors.New("wait budget spent")
	ErrRepairBudget  = errors.New("repair budget spent")
	errNoRowsChanged = errors.New("no rows changed")
)

func illegal(from, to State) error {
	return fmt.Errorf("%w: %s -> %s", ErrIllegalTransition, orNone(from), to)
}

func orNone(s State) State {
	if s == "" {
		return "(new)"
	}
	return s
}
