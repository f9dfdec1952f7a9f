package action

import (
	"context"
	"errors"
)

// ErrFenced means the process was about to write a commit's request that is no
// longer its to send: another replica took the operation over (its lease ran
// out, or its name lock was lost), or the operation moved on without it. Nothing
// was sent, and the operation's state belongs to whoever holds it now: the
// process that was fenced records nothing about it.
var ErrFenced = errors.New("the operation is no longer this process's to send")

// A Fence is the last check before a commit's request is written: it returns nil
// while the process still holds the commit attempt, and an error wrapping
// ErrFenced (or the error that kept it from proving so) otherwise.
type Fence func(context.Context) error

type fenceKey struct{}

// WithFence returns a context that carries f to the Sender, which calls it
// (CheckFence) as late as it can before the request leaves: after its own
// waits (the rate limiter), right before the write.
func WithFence(ctx context.Context, f Fence) context.Context {
	return context.WithValue(ctx, fenceKey{}, f)
}

// CheckFence runs the fence ctx carries, if any. An error that is not already
// ErrFenced is wrapped in it: a holding that cannot be proven (the journal out
// of reach) is not a holding.
func CheckFence(ctx context.Context) error {
	f, _ := ctx.Value(fenceKey{}).(Fence)
	if f == nil {
		return nil
	}
	err := f(ctx)
	if err != nil && !errors.Is(err, ErrFenced) {
		return errors.Join(ErrFenced, err)
	}
	return err
}
