package telegram

import (
	"context"
	"fmt"

	"github.com/go-telegram/bot/models"

	"github.com/countersign/countersign/command"
	"github.com/countersign/countersign/journal"
	"github.com/countersign/countersign/operator"
	"github.com/countersign/countersign/policy"
)

// Approvals beyond one tap, on the phone: the Edit button of a card and the
// reply that carries the new text, the notes of a quorum's approvals, the
// cards of an escalation, and the card that approves every approval a task
// waits on under one grant.

// grantKind is the callback kind of a task's grant: "gt1:<task>:o" asks for
// its card, "gt1:<task>:<code>" approves the list the card showed.
const grantKind = "gt1"

// editAnswer is the callback answer of a card's Edit button.
const editAnswer = "e"

// amendPrompt is the message that asks an approver for a request's new text;
// the reply to it is read by the prompt it answers (sendPrompt).
const amendPrompt = amendPromptStart + " with the new text for %s (approval %s). The verifier checks it, its card replaces the one above, and that one can no longer be approved."

const amendPromptStart = "✏️ Reply to this message"

// askAmend asks the approver who tapped Edit for the new text, as a reply to
// a prompt that names the approval.
func (t *Bot) askAmend(ctx context.Context, cq *models.CallbackQuery, apID string) {
	a, err := t.journal.Approval(ctx, apID)
	if err != nil {
		t.log.Warn("edit prompt not sent", "approval", apID, "err", err)
		return
	}
	prompt := fmt.Sprintf(amendPrompt, a.OperationID, a.ID)
	t.sendPrompt(ctx, cq.From.ID, amendPromptRef, a.ID, prompt, &models.ForceReply{ForceReply: true, InputFieldPlaceholder: "The new text"})
}

// amendLine turns a reply to an edit prompt into the /amend command it stands
// for; ok is false for any other message.
func (t *Bot) amendLine(ctx context.Context, m *models.Message) (string, bool) {
	apID, ok := t.answered(ctx, m, amendPromptRef)
	if !ok {
		return "", false
	}
	return "/amend " + apID + " " + m.Text, true
}

// noteVote answers each card of an approval that needs more approvers with who
// approved so far and how many more it needs; the buttons stay on the cards.
func (t *Bot) noteVote(ctx context.Context, a journal.Approval) {
	cards, err := t.journal.Cards(ctx, a.ID)
	if err != nil {
		t.log.Warn("approval's votes not shown", "approval", a.ID, "err", err)
		return
	}
	text := "👍 " + operator.QuorumLine(a) + "."
	done := map[int64]bool{}
	for _, c := range cards {
		if done[c.ChatID] {
			continue
		}
		done[c.ChatID] = true
		if _, err := t.send(ctx, c.ChatID, text, nil, c.MessageID); err != nil {
			t.log.Warn("approval's votes not shown", "approval", a.ID, "chat", c.ChatID, "err", err)
		}
	}
}

// edited tells the person who asked that an approver changed the request; the
// new approval's cards come with its own event.
func (t *Bot) edited(ctx context.Context, ev operator.Event) {
	if ev.Edit == nil {
		return
	}
	if chat, ok := t.taskChat(ctx, ev.Operation.ID); ok && chat != privateChat(ev.Edit.By) {
		t.reply(ctx, chat, fmt.Sprintf("✏️ User %d changed your request %s before approving it. It now reads:\n%s",
			ev.Edit.By, ev.Operation.ID, command.Visible(ev.Operation.Payload.Text)))
	}
}

// escalated shows the card of an approval nobody decided in time to the
// escalation list, and tells the person who asked.
func (t *Bot) escalated(ctx context.Context, ev operator.Event) {
	a, err := t.handler.Approval(ctx, ev.Operation.ID)
	if err != nil {
		return // decided meanwhile
	}
	a.Approvers = a.Escalation
	t.requestApproval(ctx, 0, a.Task.Requester, &a)
	if chat, ok := requesterChat(a.Task); ok {
		t.reply(ctx, chat, fmt.Sprintf("Nobody decided %s in time: its card went to %d more approver(s).", ev.Operation.ID, len(a.Approvers)))
	}
}

// grantButtons offers, below /pending, one card per task that waits on two
// approvals or more that user may decide: approve them all under one grant.
func (t *Bot) grantButtons(ctx context.Context, chat int64, ops []journal.Operation) {
	count := map[string]int{}
	var order []string
	for _, op := range ops {
		if op.State != journal.AwaitingApproval || op.Transport != Transport {
			continue
		}
		if count[op.TaskID] == 0 {
			order = append(order, op.TaskID)
		}
		count[op.TaskID]++
	}
	for _, task := range order {
		if n := count[task]; n >= 2 {
			kb := keyboard(button{Text: fmt.Sprintf("Approve all %d of %s…", n, task), CallbackData: callbackData(grantKind, task, "o")})
			if _, err := t.send(ctx, chat, fmt.Sprintf("%s waits on %d approvals: one grant can approve them all, after you see the list.", task, n), kb, 0); err != nil {
				t.log.Warn("grant offer not sent", "task", task, "err", err)
			}
		}
	}
}

// mayApproveByCommand reports whether line is an approver's command (/amend,
// /grant, /grants, /revoke) and user is an approver: an approver who is no
// operator gives those, and nothing else.
func (t *Bot) mayApproveByCommand(line string, user policy.UserID) bool {
	c, err := command.Parse(line)
	return err == nil && command.ForApprovers(c.Name) && (t.policy.Access.IsApprover(user) || t.policy.Access.IsEscalation(user))
}
