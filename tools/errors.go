package tools

import (
	"errors"
	"fmt"
	"time"

	"github.com/countersign/countersign/action"
)

// Errors a Sender returns to say what happened to a request. The operator's
// classifier reads them with errors.Is and errors.As; an error that matches none of
// them, on a commit, is treated as an unknown outcome, because resending on a guess
// is how messages get sent twice.
var (
	// ErrNotSent means the request never left the process (connection refused, DNS,
	// TLS): nothing happened in the world and a retry is safe.
	ErrNotSent = errors.New("request was not sent")
	// ErrOutcomeUnknown means the request was written and no answer says whether it
	// took effect (timeout, dropped connection, 5xx after sending).
	ErrOutcomeUnknown = errors.New("outcome unknown")
	// ErrAlreadyDone means the service refused a state-setting request because
	// the state already is what it asks for (Telegram's "message is not
	// modified"): the change is in the world, whoever made it.
	ErrAlreadyDone = errors.New("the state already is as asked")
)

// RetryAfterError means the service refused the request for now and asked to wait
// (HTTP 429). Nothing happened in the world.
type RetryAfterError struct {
	After time.Duration
	Err   error
}

func (e *RetryAfterError) Error() string {
	return fmt.Sprintf("service asked to retry after %s: %v", e.After, e.Err)
}

func (e *RetryAfterError) Unwrap() error { return e.Err }

// RepairError means the service refused the request as malformed; nothing happened.
// Fix is set when a repair by schema is known; otherwise the caller must repair.
type RepairError struct {
	Fix    *action.Fix
	Reason string
	Err    error
}

func (e *RepairError) Error() string { return fmt.Sprintf("%s: %v", e.Reason, e.Err) }

func (e *RepairError) Unwrap() error { return e.Err }

// RefusedError means the service refused for good (no rights, blocked, not found):
// nothing happened and retrying cannot help. Reason is in plain words for a human.
type RefusedError struct {
	Reason string
	Err    error
}

func (e *RefusedError) Error() string { return fmt.Sprintf("%s: %v", e.Reason, e.Err) }

func (e *RefusedError) Unwrap() error { return e.Err }

// ArgsError means a tool call's arguments are wrong; the caller must repair them.
type ArgsError struct {
	Tool   string
	Reason string
}

func (e *ArgsError) Error() string { return fmt.Sprintf("%s: %s", e.Tool, e.Reason) }
