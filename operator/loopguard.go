package operator

import (
	"context"
	"fmt"
	"slices"

	"github.com/countersign/countersign/action"
	"github.com/countersign/countersign/journal"
)

// doomLoop begins the reason of a call the loop guard stopped (its Cause is
// action.CauseDoomLoop).
const doomLoop = "possible doom loop"

// unsuccessful are the states of a call that went wrong: failed (its arguments
// refused, sent back for repair, stopped) or unknown.
var unsuccessful = []journal.State{journal.Failed, journal.Unknown}

// guard applies the loop guard of the task's policy (policy.LoopGuard) to a call
// about to run, known by its fingerprint fp and named by call (tools.Brief). It
// reports whether the call stops, with the result that says why.
func (o *Operator) guard(ctx context.Context, task journal.Task, call, fp string) (action.Result, bool, error) {
	g := task.Policy.LoopGuard
	if !g.Enabled {
		return action.Result{}, false, nil
	}
	all, err := o.opts.Journal.Operations(ctx, journal.Filter{TaskID: task.ID, Fingerprint: fp})
	if err != nil {
		return action.Result{}, false, fmt.Errorf("operator: loop guard: %w", err)
	}
	var same, through []journal.Operation
	for _, op := range all {
		if slices.Contains(unsuccessful, op.State) {
			same = append(same, op)
		} else {
			through = append(through, op)
		}
	}
	if r, stop := repeated(call, same, g.Failures); stop {
		return r, true, nil
	}
	if r, stop := again(call, through, g.Successes); stop {
		return r, true, nil
	}
	if g.PingPong < 2 {
		return action.Result{}, false, nil
	}
	recent, err := o.opts.Journal.Operations(ctx, journal.Filter{TaskID: task.ID, Limit: 2*g.PingPong - 1})
	if err != nil {
		return action.Result{}, false, fmt.Errorf("operator: loop guard: %w", err)
	}
	if r, stop := pingPong(call, fp, recent, g.PingPong); stop {
		return r, true, nil
	}
	return action.Result{}, false, nil
}

// repeated stops a call issued again after it went wrong (same lists those times,
// newest first): at once while an earlier one's outcome is unknown, or when it was
// sent back for repair and comes back unchanged; else once it failed failures times.
func repeated(call string, same []journal.Operation, failures int) (action.Result, bool) {
	for _, op := range same {
		if op.State == journal.Unknown {
			return doomStop(fmt.Sprintf("%s again while the outcome of %s is unknown", call, op.ID),
				report("this call was not run", "whether "+op.ID+" arrived",
					"look for it, then /resolve "+op.ID+" delivered|not_delivered")), true
		}
	}
	for _, op := range same {
		if op.Result != nil && op.Result.NextAction == action.NextRepair {
			return doomStop(fmt.Sprintf("%s is the repair of %s, unchanged: the same arguments were sent back for repair (%s)", call, op.ID, op.Result.Reason),
				report("this call was not run; nothing was sent", "", "change what the repair asks for, or do it by hand")), true
		}
	}
	switch n := len(same); {
	case n == 0 || n < max(1, failures):
		return action.Result{}, false
	case n == 1:
		return doomStop(fmt.Sprintf("%s again after it failed as %s", call, same[0].ID),
			report("this call was not run again; nothing was sent for it", "", "change the request")), true
	default:
		return doomStop(fmt.Sprintf("%s again after it failed %d times, last as %s", call, n, same[0].ID),
			report("this call was not run again; nothing was sent for it", "", "change the request")), true
	}
}

// again stops a call issued once more after it went through successes times
// (through lists those times, newest first): a repeat that succeeds is a loop
// too (a model drafting the same reply every step), and never a second send.
func again(call string, through []journal.Operation, successes int) (action.Result, bool) {
	if len(through) == 0 || len(through) < max(1, successes) {
		return action.Result{}, false
	}
	what := fmt.Sprintf("%s again after it went through as %s", call, through[0].ID)
	if n := len(through); n > 1 {
		what = fmt.Sprintf("%s again after it went through %d times, last as %s", call, n, through[0].ID)
	}
	return doomStop(what, report("this call was not run again; nothing more was sent for it", "",
		"use what "+through[0].ID+" gave; ask for something else if more is needed")), true
}

// pingPong stops the call that would complete rounds of two different calls
// alternating (A B A B for 2 rounds), every earlier one of them gone wrong. recent
// are the task's latest calls, newest first.
func pingPong(call, fp string, recent []journal.Operation, rounds int) (action.Result, bool) {
	if len(recent) < 2*rounds-1 || recent[0].Fingerprint == fp {
		return action.Result{}, false
	}
	other := recent[0]
	for i, op := range recent[:2*rounds-1] {
		want := other.Fingerprint
		if i%2 == 1 {
			want = fp
		}
		if op.Fingerprint != want || (op.State != journal.Failed && op.State != journal.Unknown) {
			return action.Result{}, false
		}
	}
	return doomStop(fmt.Sprintf("%s alternating with a %s call, last as %s: %d rounds, every call without success", call, other.Tool, other.ID, rounds),
		report("this call was not run; nothing was sent for it", "", "change the request")), true
}

// doomStop is the guard's stop: what repeated, then the short report for a human.
func doomStop(what, report string) action.Result {
	r := stopResult(doomLoop + ": " + what + ". " + report)
	r.Cause = action.CauseDoomLoop
	return r
}
