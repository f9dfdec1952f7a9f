package main

import (
	"log/slog"
	"slices"

	"github.com/countersign/countersign/action"
	"github.com/countersign/countersign/operator"
)

// logUnknown logs, at error level, every outcome of op that nobody can know: a
// message may or may not have arrived, nothing is resent, and a person must
// look and resolve it. It stands out from the warnings a running bot logs in
// passing (a 429, a card not edited). Those in logged were said already, by the
// crash recovery at start. It returns the unsubscribe.
func logUnknown(op *operator.Operator, logger *slog.Logger, logged []string) func() {
	return op.Subscribe(func(ev operator.Event) {
		o := ev.Operation
		if ev.Kind != operator.Outcome || ev.Result.SideEffect != action.SideEffectUnknown || slices.Contains(logged, o.ID) {
			return
		}
		attrs := []any{"op", o.ID, "action", o.Payload.Action, "target", o.Payload.Target, "next", ev.Result.Reason}
		if o.Envelope != "" {
			attrs = append(attrs, "envelope", o.Envelope)
		}
		logger.Error("outcome unknown: nothing is resent until someone verifies and resolves it", attrs...)
	})
}

// logDecisions logs, for whoever tails the service's log, each approval decided
// (who, which operation, what) and each outcome of a commit (its tool, status
// and side effect): what happened, without a word of the payload, which the
// journal keeps. An unknown outcome has its own line (logUnknown).
func logDecisions(op *operator.Operator, logger *slog.Logger) func() {
	return op.Subscribe(func(ev operator.Event) {
		o := ev.Operation
		switch {
		case ev.Kind == operator.Decided && ev.Approval != nil:
			logger.Info("approval decided", "op", o.ID, "tool", o.Tool, "decision", ev.Approval.Decision, "by", ev.Approval.DecidedBy)
		case ev.Kind == operator.Outcome && ev.Result.SideEffect != action.SideEffectUnknown:
			logger.Info("outcome", "op", o.ID, "tool", o.Tool, "status", ev.Result.Status, "side_effect", ev.Result.SideEffect)
		}
	})
}
