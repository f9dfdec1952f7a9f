package main

import (
	"fmt"
	"testing"

	"github.com/countersign/countersign/action"
	"github.com/countersign/countersign/journal"
	"github.com/countersign/countersign/policy"
)

// Each step-up invariant catches its break: a commit to the step-up chat on a
// vote given without a code (or on no vote), and a person's codes approving
// more often than fresh codes were given (a replay accepted); and holds when
// nothing broke.
func TestStepUpInvariantsCatchTheirBreaks(t *testing.T) {
	t.Parallel()
	to := func(id string, chat int64, votes ...journal.Vote) sentWith {
		return sentWith{op: journal.Operation{ID: id, State: journal.Committed, Payload: action.Payload{Target: fmt.Sprint(chat)}},
			a: journal.Approval{Decision: journal.DecideApprove, DecidedBy: operator, Votes: votes}}
	}
	coded := journal.Vote{By: operator, StepUp: policy.FactorTOTP}
	tapped := journal.Vote{By: approver}
	for _, c := range []struct {
		name   string
		sent   []sentWith
		broken bool
	}{
		{"every commit there with a code", []sentWith{to("op-a", stepUpChat, coded), to("op-b", quorumChat, tapped, tapped)}, false},
		{"a vote without a code", []sentWith{to("op-a", stepUpChat, coded), to("op-c", stepUpChat, tapped)}, true},
		{"no vote at all", []sentWith{to("op-d", stepUpChat)}, true},
	} {
		r := stepUpHeld(c.sent)
		if got := len(r.Broken) > 0; got != c.broken {
			t.Errorf("%s: broken %v (%v), want %v", c.name, got, r.Broken, c.broken)
		}
		if r.withCodes == 0 {
			t.Errorf("%s: no commit to the step-up chat counted", c.name)
		}
	}

	fresh := map[policy.UserID]int{operator: 2, approver: 1}
	if in := codesWithin(map[policy.UserID]int{operator: 2, approver: 1}, fresh); len(in.Broken) > 0 {
		t.Errorf("as many approvals as fresh codes: %v, want it to hold", in.Broken)
	}
	if in := codesWithin(map[policy.UserID]int{operator: 3}, fresh); len(in.Broken) != 1 {
		t.Errorf("a replayed code approving: %v, want it broken", in.Broken)
	}
	if in := codesWithin(map[policy.UserID]int{approver: 1}, map[policy.UserID]int{}); len(in.Broken) != 1 {
		t.Errorf("codes approving with none given: %v, want it broken", in.Broken)
	}
}
