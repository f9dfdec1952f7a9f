package main

import (
	"fmt"
	"maps"
	"strings"
	"testing"

	"github.com/countersign/countersign/action"
	"github.com/countersign/countersign/journal"
	"github.com/countersign/countersign/policy"
)

// Each step-up invariant catches its break: a commit to the step-up chat on a
// vote given without a code (or on no vote), and a used code given again that
// approved what it was given for, though a wasted fresh code of the same
// person keeps their coded votes within the fresh codes they gave; and holds
// when nothing broke.
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

	// Replays, code by code. The operator gave three fresh codes: one
	// approved ap-1, one ap-5, and one was given to ap-2 after the approver
	// had decided it with a fresh code, and approved nothing. The operator's
	// used code was given again to ap-3 (which the approver decided with a
	// fresh code) and to ap-4 (left to expire), the approver's to ap-5.
	voteOn := func(id string, votes ...journal.Vote) journal.Approval {
		return journal.Approval{ID: id, Decision: journal.DecideApprove, Votes: votes}
	}
	approverCoded := journal.Vote{By: approver, StepUp: policy.FactorTOTP}
	freshFor := map[voter]bool{{operator, "ap-1"}: true, {operator, "ap-2"}: true, {operator, "ap-5"}: true,
		{approver, "ap-2"}: true, {approver, "ap-3"}: true}
	replays := []*replay{{who: operator, approval: "ap-3", step: 7}, {who: operator, approval: "ap-4", step: 7}, {who: approver, approval: "ap-5", step: 9}}
	refused := map[string]journal.Approval{"ap-1": voteOn("ap-1", coded), "ap-2": voteOn("ap-2", approverCoded),
		"ap-3": voteOn("ap-3", approverCoded), "ap-4": {ID: "ap-4", Decision: journal.DecideExpire}, "ap-5": voteOn("ap-5", coded)}
	if in := replaysRefused(replays, freshFor, refused); len(in.Broken) > 0 {
		t.Errorf("every replay refused: %v, want it to hold", in.Broken)
	}
	// ap-3 approved by the operator's replayed code instead: their coded
	// votes (ap-1, ap-3, ap-5) are no more than the fresh codes given them,
	// and a count of them lets it by.
	accepted := maps.Clone(refused)
	accepted["ap-3"] = voteOn("ap-3", coded)
	if in := replaysRefused(replays, freshFor, accepted); len(in.Broken) != 1 || !strings.Contains(in.Broken[0], "ap-3") {
		t.Errorf("a replayed code approving, with a fresh code wasted beside it: %v, want ap-3 broken", in.Broken)
	}
	// A replay given to an approval the journal does not hold cannot be
	// checked, and says so.
	delete(accepted, "ap-3")
	if in := replaysRefused(replays, freshFor, accepted); len(in.Broken) != 1 || !strings.Contains(in.Broken[0], "ap-3") {
		t.Errorf("a replay's approval missing: %v, want ap-3 broken", in.Broken)
	}
}
