package mcp_test

import (
	"context"
	"regexp"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	sdk "github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/countersign/countersign/action"
	"github.com/countersign/countersign/journal"
	"github.com/countersign/countersign/policy"
	"github.com/countersign/countersign/telegram/telegramtest"
)

// tap waits for the approval card of opID in the approver's chat and taps
// Approve or Reject on it, as the approver's phone would.
func (r *rig) tap(t *testing.T, opID string, approve bool) {
	t.Helper()
	answer := "n"
	if approve {
		answer = "y"
	}
	re := regexp.MustCompile(`"callback_data":"(ap1:[^"]+:` + answer + `)"`)
	var card telegramtest.Message
	var data string
	if err := r.tg.WaitTimeout(15*time.Second, func(s *telegramtest.Server) bool {
		for _, m := range s.Messages(alice) {
			if mm := re.FindStringSubmatch(string(m.ReplyMarkup)); mm != nil && strings.Contains(m.Text, opID) {
				card, data = m, mm[1]
			}
		}
		return data != ""
	}); err != nil {
		t.Fatalf("no approval card for %s: %v\nlogs:\n%s", opID, err, r.logs)
	}
	r.tg.PushCallbackQuery(alice, alice, card.MessageID, data)
}

// A commit waits for the tap made in Telegram, and the wait that follows it
// reports the delivery with progress on the way; the message is sent once, along
// the path the journal records.
func TestACommitWaitsForATap(t *testing.T) {
	t.Parallel()
	r := newRig(t, nil)
	for _, how := range transports {
		t.Run(how, func(t *testing.T) {
			var mu sync.Mutex
			var progress []string
			cs := r.connect(t, how, &sdk.ClientOptions{ProgressNotificationHandler: func(_ context.Context, req *sdk.ProgressNotificationClientRequest) {
				mu.Lock()
				defer mu.Unlock()
				progress = append(progress, req.Params.Message)
			}})
			before := sendsTo(r.tg, target)
			res, sent := call(t, cs, "commit_send_message", map[string]any{"chat_id": "222", "text": "tapped on the phone, over " + how})
			assertContract(t, "commit", res, sent)
			if sent.Status != action.StatusPending {
				t.Fatalf("commit = %+v, want pending", sent)
			}
			done := make(chan action.Result, 1)
			go func() {
				p := &sdk.CallToolParams{Name: "await_outcome", Arguments: map[string]any{"operation_id": sent.OperationID, "timeout_s": 20}}
				p.SetProgressToken("tap-" + how)
				res, got := callWith(t, cs, p)
				assertContract(t, "await_outcome", res, got)
				done <- got
			}()
			r.tap(t, sent.OperationID, true)
			got := <-done
			if got.Status != action.StatusSucceeded || got.SideEffect != action.SideEffectCommitted || got.Evidence == nil || len(got.Evidence.MessageIDs) != 1 {
				t.Errorf("await = %+v, want committed with one message id", got)
			}
			if n := sendsTo(r.tg, target) - before; n != 1 {
				t.Errorf("%d sendMessage calls to %d, want exactly 1", n, target)
			}
			want := []journal.State{journal.Prepared, journal.Verified, journal.AwaitingApproval, journal.Approved, journal.Committing, journal.Committed}
			if p := path(t, r.j, sent.OperationID); !slices.Equal(p, want) {
				t.Errorf("path = %v, want %v", p, want)
			}
			// Notifications are handled apart from the result: wait for the last.
			waitUntil(t, "the progress notification of the commit", func() bool {
				mu.Lock()
				defer mu.Unlock()
				return slices.Contains(progress, sent.OperationID+" is committed")
			})
		})
	}
}

// A rejection on the phone ends the wait: terminal, rejected, nothing sent.
func TestARejectionEndsTheWait(t *testing.T) {
	t.Parallel()
	r := newRig(t, nil)
	for _, how := range transports {
		t.Run(how, func(t *testing.T) {
			cs := r.connect(t, how, nil)
			_, sent := call(t, cs, "commit_send_message", map[string]any{"chat_id": "222", "text": "rejected on the phone, over " + how})
			r.tap(t, sent.OperationID, false)
			res, got := call(t, cs, "await_outcome", map[string]any{"operation_id": sent.OperationID, "timeout_s": 20})
			assertContract(t, "await_outcome", res, got)
			if got.Status != action.StatusTerminal || got.Cause != action.CauseRejected || got.SideEffect != action.SideEffectNone {
				t.Errorf("await = %+v, want terminal, rejected, nothing sent", got)
			}
		})
	}
	if n := len(r.tg.Messages(target)); n != 0 {
		t.Errorf("%d messages delivered, want none", n)
	}
}

// A caller reading a commit that waits on a quorum learns which approvals are
// still missing, and, once an approver edited it, what it now reads.
func TestTheStatusSaysWhichApprovalsAreMissing(t *testing.T) {
	t.Parallel()
	const bob = 200
	r := newRig(t, func(p *policy.Policy) {
		p.Access.Approvers = []policy.UserID{alice, bob}
		tp := p.Tools["commit_send_message"]
		tp.Approvals = 2
		p.Tools["commit_send_message"] = tp
	})
	cs := r.connect(t, "in-memory", nil)
	_, sent := call(t, cs, "commit_send_message", map[string]any{"chat_id": "222", "text": "two keys"})
	if sent.Status != action.StatusPending || !strings.Contains(sent.Reason, "from 2 different approvers") {
		t.Fatalf("commit = %+v, want pending on two approvers", sent)
	}
	ctx := context.Background()
	a, err := r.op.PendingApproval(ctx, sent.OperationID)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := r.op.Decide(ctx, a.ID, alice, true); err != nil {
		t.Fatal(err)
	}
	_, got := call(t, cs, "get_operation", map[string]any{"operation_id": sent.OperationID})
	if !strings.Contains(got.Reason, "approved by 100 (1 of 2); 1 more approver(s) needed") {
		t.Errorf("status = %q, want the missing approval named", got.Reason)
	}
	ed, err := r.op.Edit(ctx, a.ID, bob, "two keys, corrected")
	if err != nil {
		t.Fatal(err)
	}
	_, got = call(t, cs, "get_operation", map[string]any{"operation_id": sent.OperationID})
	for _, want := range []string{"waiting for approval " + ed.Approval.ID, "edited by 200 before approval", "it now reads: two keys, corrected", "none approved yet"} {
		if !strings.Contains(got.Reason, want) {
			t.Errorf("status = %q, want %q", got.Reason, want)
		}
	}
}
