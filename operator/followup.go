package operator

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"sync"

	"github.com/countersign/countersign/action"
	"github.com/countersign/countersign/journal"
	"github.com/countersign/countersign/tools"
)

// Resume picks up what a previous process left of this operator's transport:
// approved operations not yet attempted, scheduled retries (each waits only what is
// left of its wait), and unknown operations without an envelope. Call it in the
// process that owns the transport (journal.Own), after crash recovery. The work
// runs in the background; each outcome is published as a Late Outcome event. Wait
// blocks until it is done.
func (o *Operator) Resume(ctx context.Context) error {
	if o.opts.Transport == "" || o.opts.Remote {
		return nil // sends nothing, so resumes nothing
	}
	ctx = asLate(ctx)
	if !o.replica() { // a replica's notes are the leader's, reconciled by its sweep
		if _, err := o.Reconcile(ctx); err != nil {
			return err
		}
	}
	ops, err := o.opts.Journal.Operations(ctx, journal.Filter{Transport: o.opts.Transport,
		States: []journal.State{journal.Approved, journal.RetryWait, journal.Unknown}})
	if err != nil {
		return fmt.Errorf("operator: resume: %w", err)
	}
	recovered := o.opts.Journal.Recovered()
	now, err := o.opts.Journal.LeaseNow(ctx)
	if err != nil {
		return fmt.Errorf("operator: resume: %w", err)
	}
	for _, op := range ops {
		switch {
		case op.State == journal.Unknown:
			if slices.Contains(recovered, op.ID) {
				o.settleOrTell(ctx, &o.wg, op, "the process stopped while it was sending")
			}
		case o.opts.Journal.RunsHere(op, now): // another live replica's is its own to run
			o.start(ctx, &o.wg, op.ID, "resumed operation failed")
		}
	}
	return nil
}

// start runs an operation in the background, counted by wg, and logs a failure
// with what. Its outcome is published by the run.
func (o *Operator) start(ctx context.Context, wg *sync.WaitGroup, id, what string) {
	release := o.hold(id) // held from now: the watch must not start it twice
	wg.Add(1)
	go func() {
		defer wg.Done()
		defer release()
		if _, err := o.run(ctx, id); err != nil && ctx.Err() == nil {
			o.opts.Logger.Error(what, "op", id, "err", err)
		}
	}()
}

// settleOrTell settles, in the background, a state-setting operation a stop
// left unknown (settleStopped), and tells a person of any other.
func (o *Operator) settleOrTell(ctx context.Context, wg *sync.WaitGroup, op journal.Operation, why string) {
	release := o.hold(op.ID) // the watch must not take it meanwhile
	wg.Add(1)
	go func() {
		defer wg.Done()
		defer release()
		if !o.settleStopped(ctx, op, why) {
			o.tellUnknown(ctx, op, why)
		}
	}()
}

// tellUnknown records the result of an operation that a stopped process (or
// replica) left committing, now unknown, writes its note when it has none, and
// tells whoever asked that nobody can know whether it arrived.
func (o *Operator) tellUnknown(ctx context.Context, op journal.Operation, why string) {
	r := unknownResult(op, why)
	if err := o.opts.Journal.SetResult(ctx, op.ID, r); err != nil {
		o.opts.Logger.Error("result not recorded", "op", op.ID, "err", err)
	}
	if op.Envelope == "" {
		o.envelope(ctx, op.ID, why)
	}
	o.publishOutcome(ctx, op.ID, r)
}

// Wait blocks until the work Resume started has finished.
func (o *Operator) Wait() { o.wg.Wait() }

// whyUnknown is why an operation's outcome is unknown, in words for its envelope.
func whyUnknown(ctx context.Context, j *journal.Journal, id string) string {
	ts, err := j.Transitions(ctx, id)
	if err != nil || len(ts) == 0 {
		return "outcome unknown"
	}
	switch r := ts[len(ts)-1].Reason; r {
	case journal.ReasonCrashRecovery:
		return "the process stopped while it was sending"
	case journal.ReasonLeaseExpired:
		return "the replica sending it stopped (its lease ran out)"
	default:
		return r
	}
}

// PendingApproval returns the approval an operation is waiting on, or
// journal.ErrNotFound when it waits on none.
func (o *Operator) PendingApproval(ctx context.Context, opID string) (journal.Approval, error) {
	a, err := o.opts.Journal.LatestApproval(ctx, opID)
	if err == nil && a.Decision != journal.Pending {
		err = fmt.Errorf("operator: %s waits on no approval: %w", opID, journal.ErrNotFound)
	}
	return a, err
}

// ApprovalID reads ref as a person gives it, an approval's id or the id of the
// operation that waits on it, and returns the approval's id. An operation that
// waits on no approval is journal.ErrNotFound; an approval id is returned as is,
// for the decision to check.
func (o *Operator) ApprovalID(ctx context.Context, ref string) (string, error) {
	if !journal.IsOperationID(ref) {
		return ref, nil
	}
	a, err := o.PendingApproval(ctx, ref)
	if err != nil {
		return "", err
	}
	return a.ID, nil
}

// Resolve records what a human verified about an operation whose outcome was
// unknown: delivered makes it committed; not delivered allows a Retry. Anything but
// an unknown operation returns ErrNotResolvable.
//
// The envelope is resolved first and the journal second. A stop between the two
// leaves a resolved note over an unknown operation, which the next Reconcile
// finishes (resolved_in_vault); the other order would leave a note saying "verify
// before retry" over an operation already retried. A note that cannot be written (a
// full disk) or that a person resolved the other way refuses the resolution, and
// nothing changes. The note of an earlier attempt (a retry's outcome is unknown
// again) is first replaced by the envelope of the last attempt: its answer was
// about the earlier one.
func (o *Operator) Resolve(ctx context.Context, opID string, delivered bool, by string) (action.Result, error) {
	o.resolving.Lock()
	defer o.resolving.Unlock()
	op, err := o.opts.Journal.Operation(ctx, opID)
	if err != nil {
		return action.Result{}, fmt.Errorf("operator: %w", err)
	}
	if op.State != journal.Unknown {
		return action.Result{}, refusal(ErrNotResolvable, "%s is %s, not unknown", opID, op.State)
	}
	if err := o.currentEnvelope(ctx, op); err != nil {
		return action.Result{}, err
	}
	if err := o.resolveEnvelope(opID, delivered, by); err != nil {
		return action.Result{}, err
	}
	return o.resolve(ctx, opID, delivered, by, "resolved by "+by)
}

func (o *Operator) resolve(ctx context.Context, opID string, delivered bool, by, reason string) (action.Result, error) {
	op, err := o.opts.Journal.Operation(ctx, opID)
	if err != nil {
		return action.Result{}, fmt.Errorf("operator: %w", err)
	}
	if op.State != journal.Unknown {
		return action.Result{}, refusal(ErrNotResolvable, "%s is %s, not unknown", opID, op.State)
	}
	done, total := op.PartsDone, len(op.Payload.Messages())
	if delivered {
		done++
	}
	m := journal.Move{From: journal.Unknown, To: journal.NotDelivered, Reason: reason + ": not delivered", PartsDone: &done}
	r := action.Result{Status: action.StatusRetryable, OperationID: opID, SideEffect: action.SideEffectNone, NextAction: action.NextRetry,
		Reason: "resolved not delivered by " + by + "; /retry " + opID + " sends it again"}
	switch {
	case delivered && done < total:
		m.Reason = fmt.Sprintf("%s: part %d delivered", reason, done)
		r.SideEffect, r.Reason = action.SideEffectCommitted, fmt.Sprintf("part %d of %d resolved delivered by %s; /retry %s sends the rest", done, total, by, opID)
	case delivered:
		m.To, m.Reason = journal.Committed, reason+": delivered"
		r = action.Result{Status: action.StatusSucceeded, OperationID: opID, SideEffect: action.SideEffectCommitted,
			NextAction: action.NextNone, Evidence: op.Evidence, Reason: "resolved delivered by " + by, Action: op.Payload.Action}
	}
	m.Result = &r
	err = o.opts.Journal.Move(ctx, opID, m)
	if errors.Is(err, journal.ErrStateChanged) {
		return action.Result{}, refusal(ErrNotResolvable, "%s was resolved by someone else first", opID)
	}
	if err != nil {
		return action.Result{}, fmt.Errorf("operator: %w", err)
	}
	// A note written while this resolution was on its way (by the leader, which
	// read the operation unknown) was not there to resolve before the move: it
	// is now (see noteWhatCameMeanwhile).
	if err := o.resolveEnvelope(opID, delivered, by); err != nil {
		o.opts.Logger.Warn("the note written meanwhile was not resolved; the leader's reconcile or a person will", "op", opID, "err", err)
	}
	o.publishOutcome(ctx, opID, r)
	return r, nil
}

// Retry commits again, under the same operation id, an operation a human verified
// was not delivered, asking for approval again when the task's policy says so. An
// unknown outcome, a delivered one, or any other state returns ErrNotRetryable with
// the reason: nothing is resent on a guess.
func (o *Operator) Retry(ctx context.Context, opID string) (action.Result, error) {
	op, err := o.opts.Journal.Operation(ctx, opID)
	if err != nil {
		return action.Result{}, fmt.Errorf("operator: %w", err)
	}
	switch {
	case op.Transport != o.opts.Transport:
		return action.Result{}, refusal(ErrOtherTransport, "%s is delivered by %s; retry it there", opID, orNobody(op.Transport))
	case op.State == journal.NotDelivered:
	case op.State == journal.Unknown:
		return action.Result{}, refusal(ErrNotRetryable, "%s has an unknown outcome; verify and /resolve it first", opID)
	case op.State == journal.Committed:
		return action.Result{}, refusal(ErrNotRetryable, "%s was delivered", opID)
	default:
		return action.Result{}, refusal(ErrNotRetryable, "%s is %s", opID, op.State)
	}
	task, err := o.opts.Journal.Task(ctx, op.TaskID)
	if err != nil {
		return action.Result{}, fmt.Errorf("operator: %w", err)
	}
	return o.gate(ctx, task, op, journal.NotDelivered)
}

// Cancel stops an operation that has not reached the world: one waiting for
// approval, approved but not attempted, waiting to retry, or resolved not delivered.
func (o *Operator) Cancel(ctx context.Context, opID string, by string) (action.Result, error) {
	op, err := o.opts.Journal.Operation(ctx, opID)
	if err != nil {
		return action.Result{}, fmt.Errorf("operator: %w", err)
	}
	reason := "cancelled by " + by
	switch op.State {
	case journal.AwaitingApproval:
		err = o.opts.Journal.Withdraw(ctx, opID, reason)
	case journal.Prepared, journal.Verified, journal.Approved, journal.RetryWait, journal.NotDelivered:
		err = o.opts.Journal.Move(ctx, opID, journal.Move{From: op.State, To: journal.Cancelled, Reason: reason})
	default:
		return action.Result{}, refusal(ErrNotCancelable, "%s is %s", opID, op.State)
	}
	if errors.Is(err, journal.ErrStateChanged) || errors.Is(err, journal.ErrDecided) {
		return action.Result{}, refusal(ErrNotCancelable, "%s moved on before the cancel", opID)
	}
	if err != nil {
		return action.Result{}, fmt.Errorf("operator: %w", err)
	}
	r := stopResult(report(reason+"; nothing was sent", "", ""))
	r.Status = action.StatusTerminal
	return o.finish(ctx, opID, r)
}

// Continue takes up an operation that a previous process prepared but never put
// before an approver: a crash between the start of its task and its card. A
// prepared commit is verified and gated, a verified one gated; anything further
// along is returned as it stands, and an empty record (a refusal cut short) ends
// failed. It refuses another transport's operations.
func (o *Operator) Continue(ctx context.Context, opID string) (action.Result, error) {
	op, err := o.opts.Journal.Operation(ctx, opID)
	if err != nil {
		return action.Result{}, fmt.Errorf("operator: %w", err)
	}
	if op.Transport != o.opts.Transport {
		return action.Result{}, refusal(ErrOtherTransport, "%s is delivered by %s", opID, orNobody(op.Transport))
	}
	task, err := o.opts.Journal.Task(ctx, op.TaskID)
	if err != nil {
		return action.Result{}, fmt.Errorf("operator: %w", err)
	}
	tool, ok := o.opts.Tools.Get(op.Tool)
	_, commits := tool.(tools.Committer)
	switch {
	case !ok:
		return resultOf(op), nil
	case !commits:
		// A draft was done when it was prepared: a replayed turn finds it finished,
		// never waiting for an approval it was never to have.
		return draftResult(op), nil
	case op.Payload.Action == "" && op.State == journal.Prepared:
		// A call refused before it was prepared, stopped between its record and
		// its refusal: there is nothing to put before anyone. It ends refused.
		r := stopResult(report("the call was refused before it was prepared, and the process stopped before it said why; nothing was sent", "", "make the call again"))
		r.OperationID = op.ID
		if err := o.move(ctx, op.ID, journal.Move{From: journal.Prepared, To: journal.Failed, Reason: "refusal interrupted", Result: &r}); err != nil {
			return r, err
		}
		o.publishOutcome(ctx, op.ID, r)
		return r, nil
	case op.State == journal.Prepared:
		return o.verifyAndGate(ctx, task, op)
	case op.State == journal.Verified:
		return o.gate(ctx, task, op, journal.Verified)
	}
	return resultOf(op), nil
}
