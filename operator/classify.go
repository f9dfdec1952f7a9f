package operator

import (
	"errors"
	"time"

	"github.com/countersign/countersign/action"
	"github.com/countersign/countersign/policy"
	"github.com/countersign/countersign/tools"
)

// class is the decision table's row for one failed attempt.
type class int

const (
	classRetry  class = iota // nothing happened; wait and try again
	classRepair              // refused as malformed; repair by schema or by the caller
	classVerify              // may have happened; never resend, ask a human to verify
	classStop                // refused for good; hand to a human
)

// verdict is what the classifier read from a sender's error.
type verdict struct {
	class      class
	retryAfter time.Duration
	fix        *action.Fix
	reason     string
}

// classify turns a commit's error into a row of the decision table. It reads typed
// errors only. An error it does not recognise is an unknown outcome: on a commit,
// guessing "not sent" is how messages get sent twice.
func classify(err error) verdict {
	var (
		ra  *tools.RetryAfterError
		rep *tools.RepairError
		ref *tools.RefusedError
	)
	switch {
	case errors.As(err, &ra):
		return verdict{class: classRetry, retryAfter: ra.After, reason: "the service asked to wait"}
	// A refusal says what a retry would meet, so it wins over "never sent":
	// nothing left, and nothing would leave the next time either.
	case errors.As(err, &rep):
		return verdict{class: classRepair, fix: rep.Fix, reason: rep.Reason}
	case errors.As(err, &ref):
		return verdict{class: classStop, reason: ref.Reason}
	case errors.Is(err, tools.ErrNotSent):
		return verdict{class: classRetry, reason: "the request was never sent"}
	case errors.Is(err, tools.ErrOutcomeUnknown):
		return verdict{class: classVerify, reason: "no answer after the request was sent"}
	}
	return verdict{class: classVerify, reason: "unrecognised failure after the request may have been sent"}
}

// backoff is the wait before retry number n (0 for the first retry): the service's
// retry_after when it gave one, else base doubled per retry, capped, minus up to
// jitter of it. rnd is a number in [0, 1).
func backoff(b policy.Backoff, n int, retryAfter time.Duration, rnd float64) time.Duration {
	if retryAfter > 0 {
		return retryAfter
	}
	d := b.Cap
	if n < 32 && b.Base<<n > 0 && b.Base<<n < b.Cap {
		d = b.Base << n
	}
	return d - time.Duration(rnd*b.Jitter*float64(d))
}
