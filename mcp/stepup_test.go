package mcp_test

import (
	"strings"
	"testing"

	"github.com/countersign/countersign/action"
	"github.com/countersign/countersign/policy"
)

// A caller whose commit asks a second factor learns from the pending result
// and from the operation's status that a code is awaited: a person's tap
// alone will not send it.
func TestTheStatusSaysACodeIsAwaited(t *testing.T) {
	t.Parallel()
	r := newRig(t, func(p *policy.Policy) {
		tp := p.Tools["commit_send_message"]
		tp.StepUp = policy.FactorTOTP
		p.Tools["commit_send_message"] = tp
	})
	cs := r.connect(t, "in-memory", nil)
	_, sent := call(t, cs, "commit_send_message", map[string]any{"chat_id": "222", "text": "with a code"})
	if sent.Status != action.StatusPending || !strings.Contains(sent.Reason, "each approver confirms with a TOTP code") {
		t.Fatalf("commit = %+v, want pending, saying a code is awaited", sent)
	}
	_, got := call(t, cs, "get_operation", map[string]any{"operation_id": sent.OperationID})
	if !strings.Contains(got.Reason, "each approver confirms with a TOTP code") {
		t.Errorf("status = %q, want it to say a code is awaited", got.Reason)
	}
}
