package command_test

import (
	"strings"
	"testing"

	"github.com/countersign/countersign/action"
	"github.com/countersign/countersign/command"
)

// A quorum's tap that is counted but decides nothing yet says who approved and
// how many more must, and an approval asked again because its message changed
// says what changed: the operator marks each by its cause, not by its words.
func TestDescribeSaysWhatAWaitStillNeeds(t *testing.T) {
	counted := action.Result{Status: action.StatusPending, OperationID: "op-x", Cause: action.CauseQuorum,
		Reason: "approved by 1 (1 of 2); 1 more approver(s) needed"}
	if got := command.Describe(counted); !strings.Contains(got, "approved by 1 (1 of 2)") {
		t.Errorf("Describe = %q, want the quorum's standing", got)
	}
	requoted := action.Result{Status: action.StatusPending, OperationID: "op-x", Cause: action.CauseChanged,
		Reason: `message 7 in chat 222 changed since it was approved (op-w): it read "a", it now reads "b"; nothing was sent, and it is awaiting approval ap-z until 2026-12-04T10:00:00Z`}
	if got := command.Describe(requoted); !strings.HasPrefix(got, "op-x is waiting for approval again: message 7 in chat 222 changed") {
		t.Errorf("Describe = %q, want the wait again and what changed", got)
	}
	waiting := action.Result{Status: action.StatusPending, OperationID: "op-x", Reason: "awaiting approval ap-y until 2026-12-04T10:00:00Z"}
	if got := command.Describe(waiting); got != "op-x is waiting for approval." {
		t.Errorf("Describe = %q, want the plain wait", got)
	}
}
