package operator

import (
	"strings"

	"github.com/countersign/countersign/journal"
	"github.com/countersign/countersign/tools"
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

func stopResult(reason string) tools.Result {
	return tools.Result{Status: tools.StatusTerminal, SideEffect: tools.SideEffectNone, NextAction: tools.NextStop, Reason: reason}
}

func repairable(reason string) tools.Result {
	return tools.Result{Status: tools.StatusRepairable, SideEffect: tools.SideEffectNone, NextAction: tools.NextRepair, Reason: reason}
}

// resultOf is the result an operation already has, or one read off its state.
func resultOf(op journal.Operation) tools.Result {
	if op.Result != nil {
		r := *op.Result
		r.OperationID = op.ID
		return r
	}
	r := tools.Result{OperationID: op.ID, Status: tools.StatusPending, SideEffect: tools.SideEffectPrepared, NextAction: tools.NextAwaitApproval, Reason: "operation is " + string(op.State)}
	return r
}

// draftResult is the result of a tool that commits nothing (prepare_reply): it
// succeeded when it was prepared, and has no side effect to wait for.
func draftResult(op journal.Operation) tools.Result {
	return tools.Result{Status: tools.StatusSucceeded, OperationID: op.ID, SideEffect: tools.SideEffectNone, NextAction: tools.NextNone, Draft: op.Payload.Text}
}

// pendingRetry is the result of an operation whose retry wait was cut short: it
// stays scheduled in the journal and resumes on the next start. It keeps the wait
// the service asked for, from the result journaled with the schedule.
func pendingRetry(op journal.Operation) tools.Result {
	r := tools.Result{Status: tools.StatusRetryable, OperationID: op.ID, SideEffect: tools.SideEffectNone, NextAction: tools.NextRetry,
		Reason: "retry scheduled at " + op.RetryAt.Format("15:04:05") + "; it resumes after a restart"}
	if op.Result != nil {
		r.RetryAfterMS = op.Result.RetryAfterMS
	}
	return r
}
