package operator

import (
	"strings"

	"github.com/countersign/countersign/action"
	"github.com/countersign/countersign/journal"
)

// report is the short account a stop gives a human: what is known, what is not
// known, and what to do.
func report(known, unknown, todo string) string {
	parts := []string{"Known: " + known + "."}
	if unknown != "" {
		parts = append(parts, "Not known: "+unknown+".")
	}
	if todo != "" {
		parts = append(parts, "To do: "+todo+".")
	}
	return strings.Join(parts, " ")
}

func stopResult(reason string) action.Result {
	return action.Result{Status: action.StatusTerminal, SideEffect: action.SideEffectNone, NextAction: action.NextStop, Reason: reason}
}

func repairable(reason string) action.Result {
	return action.Result{Status: action.StatusRepairable, SideEffect: action.SideEffectNone, NextAction: action.NextRepair, Reason: reason}
}

// resultOf is the result an operation already has, or one read off its state.
func resultOf(op journal.Operation) action.Result {
	if op.Result != nil {
		r := *op.Result
		r.OperationID = op.ID
		return r
	}
	r := action.Result{OperationID: op.ID, Status: action.StatusPending, SideEffect: action.SideEffectPrepared, NextAction: action.NextAwaitApproval, Reason: "operation is " + string(op.State)}
	return r
}

// draftResult is the result of a tool that commits nothing (prepare_reply): it
// succeeded when it was prepared, and has no side effect to wait for.
func draftResult(op journal.Operation) action.Result {
	return action.Result{Status: action.StatusSucceeded, OperationID: op.ID, SideEffect: action.SideEffectNone, NextAction: action.NextNone, Draft: op.Payload.Text}
}

// pendingRetry is the result of an operation whose retry wait was cut short: it
// stays scheduled in the journal and resumes on the next start. It keeps the wait
// the service asked for, from the result journaled with the schedule.
func pendingRetry(op journal.Operation) action.Result {
	r := action.Result{Status: action.StatusRetryable, OperationID: op.ID, SideEffect: action.SideEffectNone, NextAction: action.NextRetry,
		Reason: "retry scheduled at " + op.RetryAt.Format("15:04:05") + "; it resumes after a restart"}
	if op.Result != nil {
		r.RetryAfterMS = op.Result.RetryAfterMS
	}
	return r
}
