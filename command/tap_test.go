package command_test

import (
	"context"
	"strings"
	"testing"

	"github.com/countersign/countersign/action"
	"github.com/countersign/countersign/command"
	"github.com/countersign/countersign/journal"
	"github.com/countersign/countersign/policy"
)

// TestATapIsAnsweredOnceWithWhatWasRecorded: every tap, refused or carried
// out, is answered exactly once, before the work it starts, with what the
// journal recorded; only a tap that decided an approval sends, and its reply
// names who tapped on the cards.
func TestATapIsAnsweredOnceWithWhatWasRecorded(t *testing.T) {
	ctx := context.Background()
	cases := []struct {
		name   string
		user   policy.UserID
		button command.Button
		ref    func(a command.Approval) string // what the card is about
		answer string                          // a prefix of the tap's answer
		sends  int
		close  string // a prefix of the line the cards end with; "" leaves them
		amend  bool
		own    bool // self_approval: false
	}{
		{"an approver's approve", approverID, command.Approve, approvalOf, "Approved. Sending…", 1, "✅ Approved by @ann (2) at ", false, false},
		{"an approver's reject", approverID, command.Reject, approvalOf, "Rejected. Nothing will be sent.", 0, "❌ Rejected by @ann (2) at ", false, false},
		{"a stranger's approve", strangerID, command.Approve, approvalOf, "You are not an approver of this request", 0, "", false, false},
		{"a stranger's edit", strangerID, command.Edit, approvalOf, "You are not an approver of this request.", 0, "", false, false},
		{"an approver's edit", approverID, command.Edit, approvalOf, "Send the new text as a reply.", 0, "", true, false},
		{"an approve of no approval", approverID, command.Approve, func(command.Approval) string { return "ap-forged" }, "This approval is not known.", 0, "", false, false},
		{"a stranger's resolve", strangerID, command.Arrived, func(a command.Approval) string { return a.OperationID }, "Only operators can resolve.", 0, "", false, false},
		{"a resolve of what is not unknown", operatorID, command.Lost, func(a command.Approval) string { return a.OperationID }, "Not resolved: it is no longer unknown.", 0, "", false, false},
		{"a grant list of a task with one approval", approverID, command.OfferGrant, func(a command.Approval) string { return a.Operation.TaskID }, "", 0, "", false, false},
		{"a button of no kind", approverID, 0, approvalOf, "This button is not known to this bot.", 0, "", false, false},
		{"the requester's approve without self-approval", operatorID, command.Approve, approvalOf, "You asked for this, and this bot's policy has another approver approve it", 0, "", false, true},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			w := newWorld(t)
			p := testPolicy(t, operatorID, approverID)
			if c.own {
				p.SelfApproval = new(bool)
			}
			h := w.start(p, "telegram")
			r, err := h.Handle(ctx, command.Request{User: operatorID, Chat: "1", Line: "/send 222 hello"})
			if err != nil || r.Result == nil || r.Result.Status != action.StatusPending {
				t.Fatalf("/send = %+v, %v; want one approval", r, err)
			}
			a, err := h.Approval(ctx, r.Result.OperationID)
			if err != nil {
				t.Fatal(err)
			}
			var answers []string
			sentBefore := -1
			got, err := h.Tap(ctx, command.Tap{User: c.user, Name: "@ann (2)", Button: c.button, Ref: c.ref(a),
				Answer: func(s string) { answers = append(answers, s); sentBefore = w.sender.count() }})
			if err != nil {
				t.Fatalf("tap = %v", err)
			}
			if len(answers) != 1 || !strings.HasPrefix(answers[0], c.answer) || (c.answer == "" && answers[0] != "") {
				t.Errorf("answers = %q, want one that starts %q", answers, c.answer)
			}
			if sentBefore != 0 {
				t.Errorf("%d sends before the answer, want 0: the answer comes before the commit", sentBefore)
			}
			if n := w.sender.count(); n != c.sends {
				t.Errorf("sends = %d, want %d", n, c.sends)
			}
			if !strings.HasPrefix(got.Close, c.close) || (c.close == "" && got.Close != "") {
				t.Errorf("close = %q, want it to start %q", got.Close, c.close)
			}
			if got.Amend != c.amend {
				t.Errorf("amend = %v, want %v", got.Amend, c.amend)
			}
			if c.sends > 0 && (got.Result == nil || got.Result.Status != action.StatusSucceeded || !strings.Contains(got.Close, "Sent "+a.OperationID)) {
				t.Errorf("reply = %+v, want the sent result, and the cards to say it", got)
			}
			if ops := w.operations(); c.close == "" && ops[0].State != journal.AwaitingApproval {
				t.Errorf("state = %s, want it still awaiting approval: a tap that decides nothing changes nothing", ops[0].State)
			}
		})
	}
}

func approvalOf(a command.Approval) string { return a.ID }
