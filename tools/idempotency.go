package tools

import (
	"context"
	"encoding/json"
	"errors"
	"time"

	"github.com/countersign/countersign/action"
	"github.com/countersign/countersign/policy"
)

// Telegram has no idempotency key, and a bot cannot read back what it sent, so
// what may be done after an unknown outcome depends on what repeating the call
// would do. A commit tool says so by its class (policy.Idempotency): an
// additive one (a send) adds to the world each time, so an unknown outcome goes
// to a person and is never re-issued; a state-setting one (an edit) sets a state
// that a repeat sets again, so the operator settles an unknown outcome itself,
// by issuing the same call once more and reading the answer (ErrAlreadyDone
// means it landed). The operator knows the class, never the kind.

// Classed is a commit tool that declares its idempotency class. A Committer that
// does not is additive.
type Classed interface {
	Committer
	Idempotency() policy.Idempotency
}

// ClassOf is t's idempotency class: what it declares, else additive.
func ClassOf(t Tool) policy.Idempotency {
	if c, ok := t.(Classed); ok {
		return c.Idempotency()
	}
	return policy.Additive
}

// SentMessage is one message this bot sent, as the journal recorded it: where
// it is, what it reads now, and the operation that last made it so.
type SentMessage struct {
	OperationID string
	Chat        string
	MessageID   int64
	Text        string
	ParseMode   string
	// Sent is when the send was committed; At when the message last changed.
	Sent, At time.Time
	// Deleted is set when the last operation on the message deleted it.
	Deleted bool
	// Kind is what the message holds: "" for a text, else a file's kind
	// (FilePhoto, FileDocument), whose Text is its caption, or KindPoll or
	// KindRepost, whose text cannot be edited.
	Kind string
}

// The kinds of a sent message that are not a text or a file: a poll (its
// Text is the question) and a forward or copy (its Text is the source's).
const (
	KindPoll   = "poll"
	KindRepost = "repost"
)

// ErrNotSentHere means no committed operation of this bot sent the message asked
// about: a tool acts only on messages the journal shows this bot sent.
var ErrNotSentHere = errors.New("no message this bot sent")

// Sent is what a tool may read of the messages this bot sent, to act on one (an
// edit): a read-only view of the journal. Both return ErrNotSentHere for what
// the journal does not show sent.
type Sent interface {
	// Message is message id in chat as it reads now: the last committed edit of
	// it, else the send that made it.
	Message(ctx context.Context, chat string, id int64) (SentMessage, error)
	// Operation is the messages a committed operation sent (one per part).
	Operation(ctx context.Context, id string) ([]SentMessage, error)
	// Now is the time on the clock the journal dates what was sent by.
	Now() time.Time
}

// Reader is a tool whose Prepare reads what was sent (an edit must name a
// message this bot sent, and shows what it reads now). The operator calls
// PrepareFrom in place of Prepare; it has no side effect either.
type Reader interface {
	Tool
	PrepareFrom(ctx context.Context, args json.RawMessage, sent Sent) (action.Payload, error)
}
