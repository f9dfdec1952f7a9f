package telegram

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/go-telegram/bot/models"

	"github.com/countersign/countersign/command"
	"github.com/countersign/countersign/journal"
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

// codePromptMark begins every code prompt. A passkey's prompt begins with
// passkeyPromptMark instead: it asks no reply, and a reply to it is no code.
const (
	codePromptMark    = "🔐 "
	passkeyPromptMark = "🔑 "
)

// A prompt that asks a reply (a code, an edit's new text) is recorded as a
// card of its own (journal.AddCard), its ref the kind of reply and the
// approval, so that a reply is read by the message it answers
// (journal.CardAt), on any replica: never by that message's text, which a
// requester's preview above a card, or a message sent to an approver's chat,
// could copy word for word.
const (
	codePromptRef  = "prompt code "
	amendPromptRef = "prompt amend "
)

// sendPrompt sends a prompt that asks a reply about approval apID to chat,
// and records it under kind (codePromptRef, amendPromptRef).
func (t *Bot) sendPrompt(ctx context.Context, chat int64, kind, apID, text string, kb models.ReplyMarkup) {
	m, err := t.send(ctx, chat, text, kb, 0)
	if err == nil {
		err = t.journal.AddCard(ctx, journal.Card{Ref: kind + apID, ChatID: chat, MessageID: m.ID, Text: text})
	}
	if err != nil {
		t.log.Warn("prompt not sent", "approval", apID, "err", err)
	}
}

// promptRecorded bounds the wait for a prompt's record that a reply came
// before (answered).
const promptRecorded = 3 * time.Second

// readsAsPrompt reports whether text begins as a prompt that asks a reply.
func readsAsPrompt(text string) bool {
	return strings.HasPrefix(text, codePromptMark) || strings.HasPrefix(text, amendPromptStart)
}

// answered is the approval a reply answers a prompt of kind about: ok is
// false for a message that answers none (no reply, a reply to anything else,
// or to a message the bot did not record as such a prompt).
func (t *Bot) answered(ctx context.Context, m *models.Message, kind string) (apID string, ok bool) {
	r := m.ReplyToMessage
	if r == nil || r.From == nil || t.me == nil || r.From.ID != t.me.ID || m.Text == "" {
		return "", false
	}
	c, err := t.journal.CardAt(ctx, m.Chat.ID, r.ID)
	// A prompt reaches the phone as it is sent and is recorded just after, so a
	// quick reply can come first: a reply to what reads as a fresh prompt is
	// looked up again for a moment. The text only says whether to wait; the
	// record alone says what the reply answers.
	for wait := time.Now().Add(promptRecorded); errors.Is(err, journal.ErrNotFound) && readsAsPrompt(r.Text) &&
		time.Since(time.Unix(int64(r.Date), 0)) < time.Minute && time.Now().Before(wait); {
		select {
		case <-ctx.Done():
			return "", false
		case <-time.After(50 * time.Millisecond):
		}
		c, err = t.journal.CardAt(ctx, m.Chat.ID, r.ID)
	}
	if err != nil {
		if !errors.Is(err, journal.ErrNotFound) {
			t.log.Warn("a reply's prompt not read", "err", err)
		}
		return "", false
	}
	return strings.CutPrefix(c.Ref, kind)
}

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
	if mark == passkeyPromptMark {
		if _, err := t.send(ctx, chat, mark+p.Text, kb, 0); err != nil {
			t.log.Warn("passkey prompt not sent", "approval", p.Approval.ID, "err", err)
		}
		return
	}
	t.sendPrompt(ctx, chat, codePromptRef, p.Approval.ID, mark+p.Text, kb)
}

// codeLine turns a reply to a code prompt into the /code command it stands
// for; ok is false for any other message.
func (t *Bot) codeLine(ctx context.Context, m *models.Message) (string, bool) {
	apID, ok := t.answered(ctx, m, codePromptRef)
	if !ok {
		return "", false
	}
	return "/code " + apID + " " + strings.Join(strings.Fields(m.Text), ""), true
}

// confirmCode carries out /code (typed, or a reply to a prompt) as a tap on
// Approve with the code: the cards are held while it is recorded and closed
// by this hand with who approved and the outcome, and the person who asked
// is told, as for a tap. A code refused because the operator asks another
// factor now brings the prompt for that factor, as a tap would.
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
	if r.StepUp != nil {
		// A code where the operator asks a passkey now: the prompt for it,
		// with the approver's own review link, in their own chat.
		t.askCode(ctx, privateChat(author(m)), r.StepUp)
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
