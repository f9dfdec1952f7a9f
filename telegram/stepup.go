package telegram

import (
	"context"
	"fmt"
	"regexp"
	"slices"
	"strconv"
	"strings"

	"github.com/go-telegram/bot/models"

	"github.com/countersign/countersign/command"
	"github.com/countersign/countersign/operator"
	"github.com/countersign/countersign/policy"
)

// A second factor on the phone (policy step_up). A tap on Approve of an
// approval that asks one records nothing: the bot asks for the code in a
// message the phone opens a reply to (ForceReply), naming the operation, the
// approval and the payload hash the code will approve. The reply, or
// /code <approval> <code>, approves as the tap would have, cards closed by the
// same hand. Enrolment is never here: a hijacked account cannot enrol a
// factor of its own (`countersign approver totp` on the machine).

// codePromptMark begins every code prompt; the reply to one names its
// approval through the prompt's own text. A passkey's prompt begins with
// passkeyPromptMark instead: it asks no reply, and a reply to it is no code.
const (
	codePromptMark    = "🔐 "
	passkeyPromptMark = "🔑 "
)

var codeRef = regexp.MustCompile(`^🔐 Approval (ap-[a-z0-9]+) of `)

// askCode asks the approver who tapped Approve for their code, as a reply to
// a prompt that names what it approves.
func (t *Bot) askCode(ctx context.Context, chat int64, p *command.CodePrompt) {
	var kb models.ReplyMarkup = &models.ForceReply{ForceReply: true, InputFieldPlaceholder: fmt.Sprintf("%s code", p.Factor.Name())}
	mark := codePromptMark
	if p.Factor == policy.FactorPasskey {
		mark = passkeyPromptMark
		// No reply: a passkey is given in a browser, from the approver's own
		// review link (the chat is theirs: a private chat's id is its user's).
		kb = nil
		if t.handler.Reviewer != nil {
			link := t.handler.Reviewer.ReviewLink(p.Approval.ID, p.Approval.PayloadSHA256, policy.UserID(chat))
			kb = inlineKeyboard{InlineKeyboard: [][]button{{{Text: "🔑 Approve with your passkey (browser)", URL: link}}}}
		}
	}
	if _, err := t.send(ctx, chat, mark+p.Text, kb, 0); err != nil {
		t.log.Warn("code prompt not sent", "approval", p.Approval.ID, "err", err)
	}
}

// codeLine turns a reply to a code prompt into the /code command it stands
// for; ok is false for any other message.
func (t *Bot) codeLine(m *models.Message) (string, bool) {
	r := m.ReplyToMessage
	if r == nil || r.From == nil || t.me == nil || r.From.ID != t.me.ID || m.Text == "" {
		return "", false
	}
	ref := codeRef.FindStringSubmatch(r.Text)
	if ref == nil {
		return "", false
	}
	return "/code " + ref[1] + " " + strings.Join(strings.Fields(m.Text), ""), true
}

// confirmCode carries out /code (typed, or a reply to a prompt) as a tap on
// Approve with the code: the cards are held while it is recorded and closed
// by this hand with who approved and the outcome, and the person who asked
// is told, as for a tap.
func (t *Bot) confirmCode(ctx context.Context, m *models.Message, c command.Command) {
	ref := c.OpID
	if id, err := t.ops.ApprovalID(ctx, ref); err == nil {
		ref = id
	}
	defer t.cards.lock(ref)()
	ctx = operator.WithRequest(ctx, tapRequest+"code:"+strconv.Itoa(m.ID))
	r, err := t.handler.Confirm(ctx, command.Confirmation{User: author(m), Name: who(*m.From), Approval: ref, Code: c.Text,
		Answer: func(text string) { t.reply(ctx, m.Chat.ID, text) }})
	if err != nil {
		t.log.Error("code not carried out", "approval", ref, "err", err)
		t.reply(ctx, m.Chat.ID, failure(err))
		return
	}
	if r.Close != "" {
		t.closeCards(ctx, ref, r.Close)
	}
	if r.Result != nil {
		t.tellDecided(ctx, ref, *r.Result, true)
	}
}

// tellLocked tells the approver whose factor wrong codes locked, and every
// other approver of the request, that it is locked and until when: someone
// may be guessing with their Telegram account.
func (t *Bot) tellLocked(ctx context.Context, ev operator.Event) {
	if ev.Lock == nil {
		return
	}
	to := []policy.UserID{ev.Lock.User}
	if task, err := t.journal.Task(ctx, ev.Operation.TaskID); err == nil {
		for _, id := range slices.Concat(t.ops.Approvers(task), t.ops.Escalation(task)) {
			if !slices.Contains(to, id) {
				to = append(to, id)
			}
		}
	}
	apID := ""
	if ev.Approval != nil {
		apID = ev.Approval.ID
	}
	text := fmt.Sprintf("🔒 Wrong codes in a row locked the second factor of user %d until %s, on approval %s of %s: nothing was approved. "+
		"If that was not them, someone may hold their Telegram account; the codes come from their authenticator app, which the account alone does not give.",
		ev.Lock.User, ev.Lock.Until.UTC().Format("2006-01-02 15:04 UTC"), apID, ev.Operation.ID)
	for _, id := range to {
		t.reply(ctx, privateChat(id), text)
	}
}
