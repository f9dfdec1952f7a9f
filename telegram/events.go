package telegram

import (
	"context"
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/countersign/countersign/action"
	"github.com/countersign/countersign/command"
	"github.com/countersign/countersign/journal"
	"github.com/countersign/countersign/operator"
	"github.com/countersign/countersign/policy"
	"github.com/countersign/countersign/tools"
)

// onEvent takes an operator event about a Telegram operation, whatever surface
// asked for it, and hands what it calls for to the bot's background work: the
// publisher is never held up by Telegram. Every approval's cards are shown
// here, whoever asked for it; in the chat of a request of this bot, after its
// reply (onMessage holds the chat until the reply is out). A decision or
// an outcome that happened outside a tap (expiry, a note resolved in the vault, a
// /cancel or /resolve) closes its cards; work that finished on its own is told to
// the chat that asked, when a Telegram chat asked.
func (t *Bot) onEvent(ctx context.Context, ev operator.Event) {
	if ev.Operation.Transport != Transport {
		return
	}
	switch ev.Kind {
	case operator.ApprovalNeeded:
		ready, done := t.asked.take(ev.Operation.TaskID) // taken in the order published
		keep := t.ops.Showing(ctx, ev.Approval.ID)
		t.spawn(func() {
			defer done()
			defer keep()
			select {
			case <-ready:
				t.showApproval(ctx, ev.Operation.ID)
			case <-ctx.Done():
			}
		})
	case operator.Decided:
		if strings.HasPrefix(ev.Request, tapRequest) {
			return // the tap closes the cards itself
		}
		if line := closedLine(*ev.Approval); line != "" {
			t.spawn(func() { t.closeCards(context.WithoutCancel(ctx), ev.Approval.ID, line) })
		}
	case operator.Outcome:
		if strings.HasPrefix(ev.Request, tapRequest) {
			return // the tap closes the cards itself
		}
		t.spawn(func() { t.outcome(context.WithoutCancel(ctx), ev) })
	case operator.VerificationAsked:
		t.spawn(func() { t.askToVerify(ctx, ev) })
	case operator.Reminder:
		t.spawn(func() { t.remind(ctx, ev) })
	case operator.ApprovalReminder:
		t.spawn(func() { t.remindApproval(ctx, *ev.Approval) })
	case operator.Voted:
		t.spawn(func() { t.noteVote(ctx, *ev.Approval) })
	case operator.PayloadEdited:
		t.spawn(func() { t.edited(ctx, ev) })
	case operator.ApprovalEscalated:
		t.spawn(func() { t.escalated(ctx, ev) })
	case operator.StepUpLocked:
		t.spawn(func() { t.tellLocked(context.WithoutCancel(ctx), ev) })
	}
}

// showApproval shows the cards of the approval operation opID waits on, if it
// still waits, once the requester's chat has the replies it waits for (the
// reply to the request that asked, when it came from there).
func (t *Bot) showApproval(ctx context.Context, opID string) {
	op, err := t.journal.Operation(ctx, opID)
	if err != nil {
		t.log.Warn("approval not shown", "op", opID, "err", err)
		return
	}
	task, err := t.journal.Task(ctx, op.TaskID)
	if err != nil {
		t.log.Warn("approval not shown", "op", opID, "err", err)
		return
	}
	chat, _ := requesterChat(task)
	if chat != 0 && t.replies.afterReplies(ctx, chat) != nil {
		return
	}
	a, err := t.handler.Approval(ctx, opID)
	if err != nil {
		if ctx.Err() == nil {
			t.log.Info("approval not shown: it waits no more", "op", opID, "err", err)
		}
		return
	}
	t.requestApproval(ctx, chat, task.Requester, &a)
}

// closedLine is what the cards of an approval decided outside a tap say; empty
// for a decision no card was shown for (an auto_approve rule).
func closedLine(a journal.Approval) string {
	at := a.DecidedAt.UTC().Format("2006-01-02 15:04 UTC")
	switch {
	case a.Decision == journal.DecideExpire:
		return "⌛ Expired: nothing was sent."
	case a.Decision == journal.DecideEdit:
		return fmt.Sprintf("✏️ Edited by user %d at %s: this card can no longer be approved; the new text has a card of its own.", a.DecidedBy, at)
	case a.Decision == journal.DecideReject:
		return fmt.Sprintf("❌ Rejected by user %d at %s. Nothing was sent.", a.DecidedBy, at)
	case a.Decision == journal.DecideApprove && a.DecidedBy != journal.ByPolicy:
		return fmt.Sprintf("✅ Approved by user %d at %s.", a.DecidedBy, at)
	}
	return ""
}

// outcome acts on an outcome reached outside a tap.
func (t *Bot) outcome(ctx context.Context, ev operator.Event) {
	op, r := ev.Operation, ev.Result
	switch op.State {
	case journal.Cancelled:
		if a, err := t.journal.LatestApproval(ctx, op.ID); err == nil {
			t.closeCards(ctx, a.ID, "🚫 "+command.Describe(r))
		}
		return
	case journal.Committed, journal.NotDelivered:
		// Resolved (by /resolve, or in the vault): the notices asking whether it
		// arrived are answered.
		t.closeCards(ctx, op.ID, "Resolved: "+command.Describe(r))
	case journal.Unknown, journal.Failed:
	default:
		return // rejected, expired: the decision closed the cards
	}
	if ev.Late { // finished on its own: nobody's request is there to tell
		t.tellRequester(ctx, op.ID, command.Reply{Text: command.Describe(r), Result: &r})
	}
}

// askToVerify sends the task's approvers the It arrived / It did not arrive
// question about an unknown outcome someone asked them to verify.
func (t *Bot) askToVerify(ctx context.Context, ev operator.Event) {
	task, err := t.journal.Task(ctx, ev.Operation.TaskID)
	if err != nil {
		t.log.Warn("verification not asked", "op", ev.Operation.ID, "err", err)
		return
	}
	text := "Please verify: " + command.Describe(ev.Result)
	for _, chat := range t.ops.Verifiers(task) {
		t.sendUnknownNotice(ctx, privateChat(chat), ev.Operation.ID, text)
	}
}

// remind sends the task's approvers a digest's reminder of an outcome still
// unknown: what it was, since when, what to look for, and the It arrived / It
// did not arrive buttons of its first notice, which a tap answers the same way.
func (t *Bot) remind(ctx context.Context, ev operator.Event) {
	task, err := t.journal.Task(ctx, ev.Operation.TaskID)
	if err != nil {
		t.log.Warn("reminder not sent", "op", ev.Operation.ID, "err", err)
		return
	}
	text := reminderText(ev.Operation, ev.Result)
	for _, chat := range t.ops.Verifiers(task) {
		t.sendUnknownNotice(ctx, privateChat(chat), ev.Operation.ID, text)
	}
}

// remindApproval answers each card of an approval nobody decided, near its
// expiry, with a reminder that has the card's buttons: a tap on either decides
// as a tap on the card does. The reminders are recorded as cards of the
// approval, so the decision (or the expiry) closes them with the card.
func (t *Bot) remindApproval(ctx context.Context, a journal.Approval) {
	defer t.cards.lock(a.ID)()
	defer t.closeDecided(ctx, a.ID) // decided while these went out
	cards, err := t.journal.Cards(ctx, a.ID)
	if err != nil {
		t.log.Warn("approval reminder not sent", "approval", a.ID, "err", err)
		return
	}
	left := a.Expires.Sub(t.opts.Clock()).Round(time.Minute)
	text := fmt.Sprintf("⏰ %s still waits for a decision: it expires at %s (in %s), and nothing is sent without a tap.",
		a.OperationID, a.Expires.UTC().Format("2006-01-02 15:04 UTC"), left)
	kb := t.decisionKeyboard(a.ID, false) // the card it answers has Edit
	for _, c := range cards {
		m, err := t.send(ctx, c.ChatID, text, kb, c.MessageID)
		if err != nil {
			t.log.Warn("approval reminder not delivered", "approval", a.ID, "chat", c.ChatID, "err", err)
			continue
		}
		if err := t.journal.AddCard(ctx, journal.Card{Ref: a.ID, ChatID: c.ChatID, MessageID: m.ID, Text: text}); err != nil {
			t.log.Warn("approval reminder not recorded: the decision will not close it", "approval", a.ID, "err", err)
		}
	}
}

// reminderText is a digest's message about op, cut to one Telegram message.
func reminderText(op journal.Operation, r action.Result) string {
	text := fmt.Sprintf("⏰ Still unknown since %s: %s to %s.\n%s",
		op.Updated.UTC().Format("2006-01-02 15:04 UTC"), op.Payload.Action, op.Payload.Target, command.Describe(r))
	return tools.Split(text, tools.MaxMessageUnits)[0]
}

// requesterChat is the Telegram chat of the person who made a task: none for a
// task another surface made (an MCP client's has no chat at all).
func requesterChat(task journal.Task) (int64, bool) {
	if task.Surface != Transport && task.Surface != "" {
		return 0, false
	}
	chat, err := strconv.ParseInt(task.Chat, 10, 64)
	return chat, err == nil && chat != 0
}

// pendingShown is how many of /pending's operations get buttons of their own.
const pendingShown = 10

// pendingButtons puts beside the /pending list, for the first pendingShown of
// its operations, what a person can decide from the phone: an approval the
// user may decide is answered on its card in this chat with Approve and Reject
// (or its card is shown here, when this chat has none: nothing is approved
// unseen); an unknown outcome gets It arrived / It did not arrive. Each is
// recorded as a card, so the decision closes it.
func (t *Bot) pendingButtons(ctx context.Context, chat int64, user policy.UserID, ops []journal.Operation) {
	for i, op := range ops {
		if i == pendingShown {
			break
		}
		switch op.State {
		case journal.Unknown:
			t.sendUnknownNotice(ctx, chat, op.ID, command.Line(op))
		case journal.AwaitingApproval:
			t.decisionHere(ctx, chat, user, op.ID)
		}
	}
}

// decisionHere answers the card of the approval opID waits on in chat with its
// buttons, or shows the card there when the chat has none; only to a user who
// may decide it.
func (t *Bot) decisionHere(ctx context.Context, chat int64, user policy.UserID, opID string) {
	a, err := t.handler.Approval(ctx, opID)
	if err != nil || !a.Shows(user) {
		return
	}
	defer t.cards.lock(a.ID)()
	defer t.closeDecided(ctx, a.ID) // decided while these went out
	cards, err := t.journal.Cards(ctx, a.ID)
	if err != nil {
		t.log.Warn("pending approval not shown", "op", opID, "err", err)
		return
	}
	for _, c := range cards {
		if c.ChatID != chat {
			continue
		}
		text := fmt.Sprintf("%s waits for your decision: its card is the message this answers.", opID)
		m, err := t.send(ctx, chat, text, t.decisionKeyboard(a.ID, a.Editable), c.MessageID)
		if err == nil {
			err = t.journal.AddCard(ctx, journal.Card{Ref: a.ID, ChatID: chat, MessageID: m.ID, Text: text})
		}
		if err != nil {
			t.log.Warn("pending approval not shown", "op", opID, "err", err)
		}
		return
	}
	previews, text := t.card(ctx, &a)
	if err := t.showCard(ctx, chat, &a, previews, text, t.decisionKeyboard(a.ID, a.Editable)); err != nil {
		t.log.Warn("pending approval not shown", "op", opID, "err", err)
	}
}
