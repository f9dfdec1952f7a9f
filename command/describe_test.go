package command_test

import (
	"strings"
	"testing"

	"github.com/countersign/countersign/action"
	"github.com/countersign/countersign/command"
)

// A quorum's tap that is counted but decides nothing yet says who approved and
// how many more must: the operator marks it by its cause, not by its words.
func TestDescribeSaysWhatAQuorumStillNeeds(t *testing.T) {
	counted := action.Result{Status: action.StatusPending, OperationID: "op-x", Cause: action.CauseQuorum,
		Reason: "approved by 1 (1 of 2); 1 more approver(s) needed"}
	if got := command.Describe(counted); !strings.Contains(got, "approved by 1 (1 of 2)") {
		t.Errorf("Describe = %q, want the quorum's standing", got)
	}
	waiting := action.Result{Status: action.StatusPending, OperationID: "op-x", Reason: "awaiting approval ap-y until 2026-12-04T10:00:00Z"}
	if got := command.Describe(waiting); got != "op-x is waiting for approval." {
		t.Errorf("Describe = %q, want the plain wait", got)
	}
}
