package journal_test

import (
	"context"
	"errors"
	"slices"
	"testing"
	"time"

	"github.com/countersign/countersign/action"
	"github.com/countersign/countersign/journal"
)

// drawn are the moves of docs/how-it-works.md "How a call runs", and the cancels of /cancel:
// every move an operation may make, with what makes it.
var drawn = map[journal.State][]journal.State{
	"":                       {journal.Prepared},
	journal.Prepared:         {journal.Verified, journal.Failed, journal.Cancelled},                                                // verifier pass; verifier, doom loop, bad arguments
	journal.Verified:         {journal.AwaitingApproval, journal.Approved, journal.Failed, journal.Cancelled},                      // card; auto_approve rule
	journal.AwaitingApproval: {journal.Approved, journal.Rejected, journal.Expired, journal.Cancelled, journal.AwaitingApproval},   // the tap, or its lack; an edit of the payload
	journal.Approved:         {journal.Committing, journal.AwaitingApproval, journal.Failed, journal.Cancelled, journal.RetryWait}, // write ahead; asked again by the sender's policy or a change since; payload not the approved one; the chat not read
	journal.Committing:       {journal.Committed, journal.Unknown, journal.Failed, journal.RetryWait, journal.Approved},            // decision table; repair by schema
	journal.RetryWait:        {journal.Committing, journal.Failed, journal.Cancelled, journal.RetryWait},                           // the scheduled retry; the chat not read again
	journal.Unknown:          {journal.Committed, journal.NotDelivered, journal.Committing},                                        // resolved delivered, or not; a state-setting call a stop left unknown, settled by the operator
	journal.NotDelivered:     {journal.AwaitingApproval, journal.Approved, journal.Cancelled},                                      // /retry
}

var allStates = []journal.State{journal.Prepared, journal.Verified, journal.AwaitingApproval, journal.Approved, journal.Rejected,
	journal.Expired, journal.Committing, journal.RetryWait, journal.Committed, journal.Unknown, journal.NotDelivered, journal.Failed, journal.Cancelled}

// pathTo is the shortest list of drawn moves from a new operation to s.
func pathTo(s journal.State) []journal.State {
	prev := map[journal.State]journal.State{}
	seen := map[journal.State]bool{"": true}
	queue := []journal.State{""}
	for len(queue) > 0 {
		from := queue[0]
		queue = queue[1:]
		for _, to := range drawn[from] {
			if !seen[to] {
				seen[to], prev[to] = true, from
				queue = append(queue, to)
			}
		}
	}
	var path []journal.State
	for at := s; at != ""; at = prev[at] {
		path = append([]journal.State{at}, path...)
	}
	return path
}

// TestTheJournalRefusesEveryMoveNotDrawn: an operation brought to each state by
// drawn moves refuses every move the state machine does not draw from there, with
// ErrIllegalTransition, and stays where it was with nothing logged; every drawn
// move is one the journal allows.
func TestTheJournalRefusesEveryMoveNotDrawn(t *testing.T) {
	t.Parallel()
	forEachBackend(t, testTheJournalRefusesEveryMoveNotDrawn)
}

func testTheJournalRefusesEveryMoveNotDrawn(t *testing.T, name string) {
	j := open(t, name, time.Now)
	ctx := context.Background()
	task, _ := newOp(t, j)
	for _, from := range append([]journal.State{""}, allStates...) {
		for _, to := range allStates {
			if got, want := journal.CanMove(from, to), slices.Contains(drawn[from], to); got != want {
				t.Errorf("CanMove(%q, %s) = %v, want %v", from, to, got, want)
			}
		}
	}
	for _, s := range allStates {
		op, err := j.CreateOperation(ctx, journal.Operation{TaskID: task.ID, Tool: "commit_send_message", Fingerprint: "fp",
			Surface: "telegram", Transport: "telegram", Payload: action.Payload{Action: "send_message", Target: "222", Text: "hi"}}, "prepared")
		if err != nil {
			t.Fatal(err)
		}
		path := pathTo(s)
		for i := 1; i < len(path); i++ {
			if err := j.Move(ctx, op.ID, journal.Move{From: path[i-1], To: path[i], StartAttempt: path[i] == journal.Committing}); err != nil {
				t.Fatalf("drawn move %s -> %s: %v", path[i-1], path[i], err)
			}
		}
		before, _ := j.Transitions(ctx, op.ID)
		for _, to := range allStates {
			if slices.Contains(drawn[s], to) {
				continue
			}
			if err := j.Move(ctx, op.ID, journal.Move{From: s, To: to, Reason: "undrawn"}); !errors.Is(err, journal.ErrIllegalTransition) {
				t.Errorf("%s -> %s = %v, want ErrIllegalTransition", s, to, err)
			}
		}
		if got, _ := j.Operation(ctx, op.ID); got.State != s {
			t.Errorf("after the refused moves from %s: state %s", s, got.State)
		}
		if after, _ := j.Transitions(ctx, op.ID); len(after) != len(before) {
			t.Errorf("refused moves from %s were logged: %+v", s, after[len(before):])
		}
	}
}
