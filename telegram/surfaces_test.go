package telegram_test

import (
	"context"
	"encoding/json"
	"errors"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/countersign/countersign/action"
	"github.com/countersign/countersign/internal/rigtest"
	"github.com/countersign/countersign/internal/wiring"
	"github.com/countersign/countersign/journal"
	"github.com/countersign/countersign/operator"
	"github.com/countersign/countersign/policy"
	"github.com/countersign/countersign/telegram/telegramtest"
	"github.com/countersign/countersign/tools"
)

// neverSender is the sender of a process that must never deliver.
type neverSender struct{ t *testing.T }

func (s neverSender) Send(context.Context, tools.Message) (tools.Delivery, error) {
	s.t.Error("a Remote operator sent a message")
	return tools.Delivery{}, tools.ErrNotSent
}

// remote is a second process's operator over the rig's journal file, as a stdio
// `countersign mcp` beside the running bot: it records operations under Telegram's
// transport and never delivers them.
func (r *rig) remote() *operator.Operator {
	r.t.Helper()
	return rigtest.New(r.t, rigtest.Dir(r.dir), rigtest.Policy(r.pol), rigtest.Sender(neverSender{r.t}),
		rigtest.Parts(func(w *wiring.Parts) { w.Remote = true })).Operator
}

// remoteSend makes a commit_send_message to the target in a task of an outside
// agent: no chat, no requester.
func (r *rig) remoteSend(op *operator.Operator, text string) action.Result {
	r.t.Helper()
	return r.remoteSendFor(op, 0, text)
}

// remoteSendFor is remoteSend for a task that requester asked for (0: nobody).
func (r *rig) remoteSendFor(op *operator.Operator, requester policy.UserID, text string) action.Result {
	r.t.Helper()
	ctx := context.Background()
	task, err := op.StartTask(ctx, journal.Task{Surface: "mcp", Summary: "mcp session", Requester: requester})
	if err != nil {
		r.t.Fatal(err)
	}
	args, _ := json.Marshal(tools.SendArgs{ChatID: "222", Text: text})
	res, err := op.Call(ctx, task.ID, operator.Call{Tool: "commit_send_message", Args: args})
	if err != nil || res.Status != action.StatusPending {
		r.t.Fatalf("remote call = %+v, %v; want pending", res, err)
	}
	return res
}

// noRequesterTold fails if anything went to a chat that is no Telegram chat.
func (r *rig) noRequesterTold() {
	r.t.Helper()
	for _, c := range r.srv.CallsTo("sendMessage") {
		if c.ChatID == 0 {
			r.t.Errorf("a message went to chat 0 (an MCP task has no chat): %s", r.callSummary())
		}
	}
}

// An approval asked by another process gets its cards within the watch's
// interval, not after a grace of minutes, and its tap delivers once.
func TestAnotherProcesssApprovalIsShownAtOnce(t *testing.T) {
	t.Parallel()
	r := newRig(t)
	rop := r.remote()
	asked := time.Now()
	res := r.remoteSend(rop, "asked by an outside agent")
	card := r.cardFor(alice, res.OperationID)
	r.cardFor(bob, res.OperationID)
	if took := time.Since(asked); took > 20*watchEvery {
		t.Errorf("the cards took %s, want about the watch's %s", took, watchEvery)
	}
	r.tap(alice, card, "Approve")
	r.waitFor("the delivery", atLeast(1, delivered(target)))
	r.shutdown()
	if n := len(sendCalls(r.srv, target)); n != 1 {
		t.Errorf("sends to the target = %d, want 1", n)
	}
	for _, chat := range []int64{alice, bob} {
		if n := len(cardsIn(r.srv, chat)); n != 1 {
			t.Errorf("cards in chat %d = %d, want 1", chat, n)
		}
	}
	r.noRequesterTold()
}

// A commit another process auto-approved is left approved, and the owner's
// watch delivers it exactly once.
func TestARemotelyAutoApprovedCommitIsDeliveredOnceByTheOwner(t *testing.T) {
	t.Parallel()
	r := newRig(t, withPolicy(func(p *policy.Policy) {
		p.AutoApprove = []policy.AutoApprove{{Tool: "commit_send_message", Chats: []string{"222"}}}
	}))
	res := r.remoteSend(r.remote(), "approved by a rule, elsewhere")
	r.waitFor("the delivery", atLeast(1, delivered(target)))
	r.waitFor("the commit journaled", func(*telegramtest.Server) bool { return r.operation(res.OperationID).State == journal.Committed })
	ts, err := r.j.Transitions(context.Background(), res.OperationID)
	if err != nil {
		t.Fatal(err)
	}
	r.shutdown() // every commit the bot started has ended
	if n := len(sendCalls(r.srv, target)); n != 1 {
		t.Errorf("sendMessage to the target = %d, want 1%s", n, r.callSummary())
	}
	var path []journal.State
	for _, tr := range ts {
		path = append(path, tr.To)
	}
	want := []journal.State{journal.Prepared, journal.Verified, journal.AwaitingApproval, journal.Approved, journal.Committing, journal.Committed}
	if !slices.Equal(path, want) {
		t.Errorf("path = %v, want %v", path, want)
	}
	r.noRequesterTold()
}

// The owner's sweep expires another surface's approval and says so on its cards.
func TestExpiryOfAnotherSurfacesApprovalEditsItsCard(t *testing.T) {
	t.Parallel()
	r := newRig(t)
	r.pol.ApprovalTTL = 1500 * time.Millisecond // the remote's task takes this snapshot
	res := r.remoteSend(r.remote(), "nobody answers")
	card := r.cardFor(alice, res.OperationID)
	r.waitFor("the card marked expired", func(s *telegramtest.Server) bool {
		m, _ := s.Message(alice, card.MessageID)
		return strings.Contains(m.Text, "⌛ Expired") && !strings.Contains(string(m.ReplyMarkup), "ap1:")
	})
	if got := r.operation(res.OperationID).State; got != journal.Expired {
		t.Errorf("state = %s, want expired", got)
	}
	r.noRequesterTold()
}

// RequestVerification from another process puts the It arrived / It did not
// arrive question to every approver of the task, its requester among them
// where self-approval is off (saying what happened approves nothing); a known
// outcome is refused.
func TestRequestVerificationAsksTheApprovers(t *testing.T) {
	t.Parallel()
	off := false
	r := newRig(t, withPolicy(func(p *policy.Policy) {
		p.AutoApprove = []policy.AutoApprove{{Tool: "commit_send_message", Chats: []string{"222"}}}
		p.SelfApproval = &off
	}))
	r.srv.Inject(telegramtest.AcceptThenDrop().For("sendMessage").InChat(target).Times(1))
	rop := r.remote()
	lost := r.remoteSendFor(rop, alice, "did it arrive?")
	r.waitFor("the unknown outcome", func(*telegramtest.Server) bool { return r.operation(lost.OperationID).State == journal.Unknown })
	ctx := context.Background()
	pending := r.remoteSend(rop, "delivered fine")
	r.waitFor("the second delivery", func(*telegramtest.Server) bool { return r.operation(pending.OperationID).State == journal.Committed })
	if _, err := rop.RequestVerification(ctx, pending.OperationID, "mcp:test"); !errors.Is(err, operator.ErrNotResolvable) {
		t.Errorf("RequestVerification of a committed operation = %v, want ErrNotResolvable", err)
	}
	if _, err := rop.RequestVerification(ctx, lost.OperationID, "mcp:test"); err != nil {
		t.Fatal(err)
	}
	notice := r.notice(alice)
	r.notice(bob)
	if !strings.Contains(notice.Text, lost.OperationID) {
		t.Errorf("notice = %q, want it about %s", notice.Text, lost.OperationID)
	}
	if got := r.operation(lost.OperationID).State; got != journal.Unknown {
		t.Errorf("state after the request = %s: asking resolves nothing", got)
	}
	r.tap(alice, notice, "It arrived")
	r.waitFor("the resolution", func(*telegramtest.Server) bool { return r.operation(lost.OperationID).State == journal.Committed })
	r.shutdown()
	if n := len(sendCalls(r.srv, target)); n != 2 {
		t.Errorf("sends to the target = %d, want 2 (each once)", n)
	}
	r.noRequesterTold()
}

// A /cancel or /resolve typed as a command (no tap on the card) closes the cards
// it answers: the card of the cancelled approval, the notices of the resolved
// outcome.
func TestCommandsCloseTheCardsTheyAnswer(t *testing.T) {
	t.Parallel()
	t.Run("cancel", func(t *testing.T) {
		r := newRig(t)
		r.command(alice, "/send 222 never mind")
		card := r.card(alice)
		opID := opIn(t, card.Text)
		r.command(alice, "/cancel "+opID)
		r.waitFor("the card closed", func(s *telegramtest.Server) bool {
			m, _ := s.Message(alice, card.MessageID)
			return strings.Contains(m.Text, "🚫") && !strings.Contains(string(m.ReplyMarkup), "ap1:")
		})
	})
	t.Run("resolve", func(t *testing.T) {
		r := newRig(t)
		r.srv.Inject(telegramtest.AcceptThenDrop().For("sendMessage").InChat(target).Times(1))
		r.approveSend("did it arrive?")
		notice := r.notice(alice)
		opID := opIn(t, notice.Text)
		r.command(alice, "/resolve "+opID+" delivered")
		r.waitFor("the notice closed", func(s *telegramtest.Server) bool {
			m, _ := s.Message(alice, notice.MessageID)
			return strings.Contains(m.Text, "Resolved: ") && !strings.Contains(string(m.ReplyMarkup), "rs1:")
		})
	})
}
