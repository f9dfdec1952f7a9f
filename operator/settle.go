package operator

import (
	"context"
	"errors"
	"fmt"

	"github.com/countersign/countersign/action"
	"github.com/countersign/countersign/journal"
	"github.com/countersign/countersign/policy"
	"github.com/countersign/countersign/tools"
	"github.com/countersign/countersign/vault"
)

// An unknown outcome of a state-setting commit (an edit) is settled here, not by
// a person: the same call again sets the same state, so it is issued once more,
// as a new attempt under the same fence, and its answer read. A success, or the
// service saying the state already is as asked (tools.ErrAlreadyDone), is the
// change in the world: it is recorded with its evidence and ReasonSettled. Any
// other answer leaves the outcome unknown, for a person, as for an additive
// call; the envelope says the repeat was tried.

// ReasonSettled is the reason of the move to committed of a state-setting commit
// whose outcome was unknown, settled by repeating it.
const ReasonSettled = "settled: the state-setting call was repeated, and the service's answer says the change is made"

// settles reports whether an unknown outcome of tool's commits in task is
// settled by repeating the call: the tool sets a state, and neither the task's
// policy nor the one in force here declares it additive (a person settles it).
func (o *Operator) settles(task journal.Task, tool tools.Tool) bool {
	name := tool.Name()
	return tools.ClassOf(tool) == policy.StateSetting &&
		task.Policy.Tools[name].Idempotency != policy.Additive && o.opts.Policy.Tools[name].Idempotency != policy.Additive
}

// settle repeats the commit of op, a single message whose attempt ended with an
// unknown outcome (v, cause), and records what the repeat's answer says.
func (o *Operator) settle(ctx context.Context, op journal.Operation, committer tools.Committer, fence *journal.Fence, v verdict, cause error) (*action.Result, error) {
	err := o.opts.Journal.Reattempt(ctx, op.ID, "unknown", cause.Error(), "settle: the same state-setting call again ("+v.reason+")")
	if err != nil {
		return nil, fmt.Errorf("operator: %w", err)
	}
	fence.Attempt++
	op.Attempts++
	if err := action.CheckFence(ctx); err != nil {
		return nil, err
	}
	got, err := committer.Commit(ctx, partPayload(op, op.Payload.Text))
	switch {
	case errors.Is(err, action.ErrFenced):
		return nil, err
	case err == nil || errors.Is(err, tools.ErrAlreadyDone):
		r := action.Result{Status: action.StatusSucceeded, OperationID: op.ID, SideEffect: action.SideEffectCommitted, NextAction: action.NextNone,
			Evidence: &got, Reason: ReasonSettled, Action: op.Payload.Action}
		outcome := "committed"
		if err != nil {
			outcome = "committed: " + err.Error()
		}
		if err := o.move(ctx, op.ID, journal.Move{From: journal.Committing, To: journal.Committed, Reason: ReasonSettled, Result: &r,
			AttemptOutcome: "committed", AttemptDetail: outcome}); err != nil {
			return &r, err
		}
		o.publishOutcome(ctx, op.ID, r)
		return &r, nil
	}
	again := classify(err)
	return o.unknown(ctx, op, v.reason+"; repeating it did not settle it ("+again.reason+")", err.Error())
}

// ReasonSettledByReading is the reason of the move to committed of a
// state-setting commit whose outcome was unknown, settled by reading the state
// (a tool whose repeat has a cost, tools.StateReader).
const ReasonSettledByReading = "settled: the state was read, and shows the change made"

// ReasonNotInEffect is the reason of the move to not delivered of a
// state-setting commit whose outcome was unknown, when reading the state shows
// that the change is not there.
const ReasonNotInEffect = "settled: the state was read, and shows the change not made"

// settleByReading settles the unknown outcome of a commit of a tool that reads
// its state rather than repeat itself: the change in the world is committed,
// the change not there is not delivered (a person may /retry it), and a state
// that cannot be read leaves the outcome unknown for a person.
func (o *Operator) settleByReading(ctx context.Context, op journal.Operation, reader tools.StateReader, v verdict, cause error) (*action.Result, error) {
	ev, landed, err := reader.Landed(ctx, partPayload(op, op.Payload.Text))
	if err != nil {
		return o.unknown(ctx, op, v.reason+"; reading the state did not settle it ("+classify(err).reason+")", cause.Error())
	}
	if landed {
		r := action.Result{Status: action.StatusSucceeded, OperationID: op.ID, SideEffect: action.SideEffectCommitted, NextAction: action.NextNone,
			Evidence: &ev, Reason: ReasonSettledByReading, Action: op.Payload.Action}
		if err := o.move(ctx, op.ID, journal.Move{From: journal.Committing, To: journal.Committed, Reason: ReasonSettledByReading, Result: &r,
			AttemptOutcome: "committed", AttemptDetail: "read after: " + cause.Error()}); err != nil {
			return &r, err
		}
		o.publishOutcome(ctx, op.ID, r)
		return &r, nil
	}
	unknown := unknownResult(op, v.reason)
	if err := o.move(ctx, op.ID, journal.Move{From: journal.Committing, To: journal.Unknown, Reason: v.reason, Result: &unknown,
		AttemptOutcome: "unknown", AttemptDetail: cause.Error()}); err != nil {
		return nil, err
	}
	r := action.Result{Status: action.StatusRetryable, OperationID: op.ID, SideEffect: action.SideEffectNone, NextAction: action.NextRetry,
		Reason: "the state was read and shows the change not made; /retry " + op.ID + " makes it again"}
	if err := o.move(ctx, op.ID, journal.Move{From: journal.Unknown, To: journal.NotDelivered, Reason: ReasonNotInEffect, Result: &r}); err != nil {
		return nil, err
	}
	o.publishOutcome(ctx, op.ID, r)
	return &r, nil
}

// ReasonSettleStopped is the reason of the move from unknown back to
// committing of a state-setting commit that a stopped process (or replica)
// left committing: the operator settles it as it settles an answer lost.
const ReasonSettleStopped = "settle: a stop left the state-setting call's outcome unknown; the system settles it"

// settleStopped settles the outcome of a state-setting commit that a stopped
// process (or replica) left committing, which recovery made unknown: under
// this process's claim, the same call is repeated (or, for a tool whose
// repeat has a cost, its state read), as when an attempt loses its answer. It
// reports false, having done nothing, for an operation the operator does not
// settle (an additive one: a person is told), and true once it has taken it:
// what came of it is recorded and told as any outcome.
func (o *Operator) settleStopped(ctx context.Context, op journal.Operation, why string) bool {
	tool, ok := o.opts.Tools.Get(op.Tool)
	committer, commits := tool.(tools.Committer)
	if !ok || !commits || len(op.Payload.Messages()) != 1 || op.Transport != o.opts.Transport {
		return false
	}
	task, err := o.opts.Journal.Task(ctx, op.TaskID)
	if err != nil || !o.settles(task, tool) {
		return false
	}
	if err := o.move(ctx, op.ID, journal.Move{From: journal.Unknown, To: journal.Committing, Reason: ReasonSettleStopped}); err != nil {
		// Resolved meanwhile, or held by another live replica: theirs to tell.
		o.opts.Logger.Info("state-setting call left unknown by a stop not settled here", "op", op.ID, "err", err)
		return errors.Is(err, journal.ErrStateChanged) || errors.Is(err, journal.ErrHeld)
	}
	op.State = journal.Committing
	ctx = tools.WithOperation(ctx, op.ID)
	fence := &journal.Fence{Operation: op.ID, Attempt: op.Attempts}
	ctx = action.WithFence(context.WithoutCancel(ctx), func(ctx context.Context) error { return o.opts.Journal.ProveHolding(ctx, *fence) })
	v, cause := verdict{class: classVerify, reason: why}, errors.New(why)
	if reader, ok := tool.(tools.StateReader); ok {
		_, err = o.settleByReading(ctx, op, reader, v, cause)
	} else {
		_, err = o.settle(ctx, op, committer, fence, v, cause)
	}
	if err != nil && ctx.Err() == nil {
		o.opts.Logger.Error("state-setting call left unknown by a stop not settled", "op", op.ID, "err", err)
	}
	// The start's reconcile may have written the note of the unknown outcome
	// before it was settled: it says now what the journal says.
	if o.opts.Vault != nil && o.leading() {
		if err := o.noteWhatCameMeanwhile(ctx, op.ID); err != nil && !errors.Is(err, vault.ErrNotFound) {
			o.opts.Logger.Warn("the note of a settled call does not say so yet; the sweep's reconcile will", "op", op.ID, "err", err)
		}
	}
	return true
}
