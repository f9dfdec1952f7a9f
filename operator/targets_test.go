package operator_test

import (
	"context"
	"strings"
	"testing"

	"github.com/countersign/countersign/action"
	"github.com/countersign/countersign/journal"
	"github.com/countersign/countersign/policy"
)

// TestTargetAliasesAreOneTarget: +222, 0222 and 222 are one chat to Telegram, and
// @News_Desk is @news_desk; the duplicate check, the house rules, auto_approve and
// the loop guard see one chat too.
func TestTargetAliasesAreOneTarget(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	newTask := func(h *harness) string {
		task, err := h.op.StartTask(ctx, journal.Task{Requester: operatorID, Chat: "1", Summary: "alias"})
		if err != nil {
			t.Fatal(err)
		}
		return task.ID
	}
	for _, tt := range []struct{ first, again string }{{"222", "+222"}, {"0222", "222"}, {"@news_desk", "@News_Desk"}} {
		t.Run("duplicate to "+tt.again+" after "+tt.first, func(t *testing.T) {
			h := verifying(t)
			_, first := h.send(tt.first, "Weekly digest is out")
			r, err := h.op.Call(ctx, newTask(h), callSend(tt.again, "Weekly digest is out"))
			if err != nil {
				t.Fatal(err)
			}
			if r.NextAction != action.NextStop || !strings.Contains(r.Reason, first) {
				t.Errorf("duplicate = %+v, want a stop naming %s", r, first)
			}
		})
	}
	t.Run("house rule for a target", func(t *testing.T) {
		h := newHarness(t)
		free, err := policy.ParsePattern("free")
		if err != nil {
			t.Fatal(err)
		}
		h.pol.Verify.Rules = []policy.Rule{
			{Target: "@news_desk", Forbid: []policy.Pattern{free}, Reason: "desk style"},
			{Target: "222", Forbid: []policy.Pattern{free}, Reason: "chat style"},
		}
		h.open()
		for _, target := range []string{"@News_Desk", "+222", "0222"} {
			r, _ := h.op.Call(ctx, newTask(h), callSend(target, "Free coffee today"))
			if r.Status != action.StatusRepairable || !strings.Contains(r.Reason, "style") {
				t.Errorf("send to %s = %+v, want a repair from the rule", target, r)
			}
		}
	})
	t.Run("auto_approve for 222 covers 0222", func(t *testing.T) {
		h := newHarness(t)
		h.pol.AutoApprove = append(h.pol.AutoApprove, policyRule("commit_send_message", "222"))
		h.open()
		r, err := h.op.Call(ctx, newTask(h), callSend("0222", "daily digest"))
		if err != nil || r.Status != action.StatusSucceeded {
			t.Fatalf("auto-approved call to 0222 = %+v, %v; want succeeded", r, err)
		}
		if sent := h.sender.Sent(); len(sent) != 1 || sent[0].Target != "222" {
			t.Errorf("sent = %+v, want one message to 222", sent)
		}
	})
	t.Run("loop guard", func(t *testing.T) {
		h := newHarness(t, blocked)
		taskID, opID := h.send("222", "hello")
		if r, _ := h.op.Decide(ctx, h.approval(opID), approverID, true); r.NextAction != action.NextStop {
			t.Fatalf("first call = %+v, want a stop", r)
		}
		r, err := h.op.Call(ctx, taskID, callSend("+222", "hello"))
		if err != nil {
			t.Fatal(err)
		}
		if !strings.Contains(r.Reason, "possible doom loop") {
			t.Errorf("same call to +222 = %+v, want a possible doom loop", r)
		}
	})
}
