package telegram

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"log/slog"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/go-telegram/bot"
	"github.com/go-telegram/bot/models"

	"github.com/countersign/countersign/action"
	"github.com/countersign/countersign/command"
	"github.com/countersign/countersign/internal/stages"
	"github.com/countersign/countersign/journal"
	"github.com/countersign/countersign/operator"
	"github.com/countersign/countersign/policy"
	"github.com/countersign/countersign/review"
	"github.com/countersign/countersign/tools"
	"github.com/countersign/countersign/verifier"
)

// Callback data is "<kind><version>:<id>:<answer>": opaque, versioned, far under
// Telegram's 64 bytes, and never the payload.
const (
	approveKind = "ap1"
	resolveKind = "rs1"
)

func callbackData(kind, id, answer string) string { return kind + ":" + id + ":" + answer }

func parseCallback(data string) (kind, id, answer string, ok bool) {
	f := strings.Split(data, ":")
	if len(f) != 3 || f[1] == "" {
		return "", "", "", false
	}
	return f[0], f[1], f[2], true
}

// button and inlineKeyboard are the wire form of a one-row inline keyboard. The
// library's InlineKeyboardButton always sends an empty "copy_text" object, which the
// Bot API has been reported to refuse (BUTTON_COPY_TEXT_INVALID); these carry only
// the fields a callback button has.
type button struct {
	Text         string `json:"text"`
	CallbackData string `json:"callback_data,omitempty"`
	// WebApp opens a Mini App (the review page) instead: only in a private
	// chat, which every card is.
	WebApp *webApp `json:"web_app,omitempty"`
	// URL opens a page in a browser (a passkey's review link: WebAuthn runs
	// there, not in the Mini App).
	URL string `json:"url,omitempty"`
}

// webApp is a web_app button's page.
type webApp struct {
	URL string `json:"url"`
}

type inlineKeyboard struct {
	InlineKeyboard [][]button `json:"inline_keyboard"`
}

// noKeyboard removes the buttons of an edited message.
var noKeyboard = inlineKeyboard{InlineKeyboard: [][]button{}}

func keyboard(buttons ...button) inlineKeyboard {
	return inlineKeyboard{InlineKeyboard: [][]button{buttons}}
}

// cardText is what an approver reads: action, target, the exact text (or where it
// is) with its length as Telegram counts it, the operation, a prefix of the payload
// hash, the verdict and the expiry. The text's control and invisible characters are
// written as escapes (command.Visible); a text with a parse mode also shows what its
// recipient will see and where each of its links really goes (command.Rendering).
func cardText(a *command.Approval, previews int, audience string, reviewed bool) string {
	p := a.Operation.Payload
	inline := previews == 0
	var b strings.Builder
	to := p.Target
	if audience != "" {
		to += " (" + audience + ")"
	}
	fmt.Fprintf(&b, "Approval needed: %s\nTo: %s\nOperation: %s\nPayload: sha256 %s\n", p.Action, command.Visible(to), a.Operation.ID, a.PayloadSHA256[:12])
	if a.AskedBy != "" {
		fmt.Fprintf(&b, "Asked by: %s\n", command.Visible(a.AskedBy))
	}
	if a.Verdict != "" {
		fmt.Fprintf(&b, "Verified: %s\n", a.Verdict)
	}
	fmt.Fprintf(&b, "Expires: %s\n", a.Expires.UTC().Format("2006-01-02 15:04 UTC"))
	if a.Required > 1 {
		fmt.Fprintf(&b, "Needs: %d different approvers (a rejection by any ends it)\n", a.Required)
	}
	if a.Factor != policy.NoFactor {
		if a.Factor == policy.FactorPasskey {
			b.WriteString("Second factor: passkey (tap Approve for a link: approve in your phone's browser with your passkey)\n")
		} else {
			fmt.Fprintf(&b, "Second factor: %s (tap Approve, then send your code)\n", a.Factor.Name())
		}
	}
	if !a.Escalated.IsZero() {
		b.WriteString("Escalated: nobody decided it in time\n")
	}
	if p.ParseMode != "" {
		fmt.Fprintf(&b, "Parse mode: %s\n", p.ParseMode)
	}
	if facts := command.Facts(a.Shown); facts != "" {
		b.WriteString("\n" + facts)
	}
	n := command.Characters(p)
	switch label := command.TextLabel(a.Shown, p); {
	case label == "": // a delete: the facts said what goes
	case inline && p.ParseMode != "":
		fmt.Fprintf(&b, "\n%s, exactly as it will be sent:\n%s", label, command.Visible(p.Text))
	case inline:
		fmt.Fprintf(&b, "\n%s, exactly as it will be sent (%d characters):\n%s", label, n, command.Visible(p.Text))
	case p.Request != nil: // a body is sent whole; only its previews are cut
		fmt.Fprintf(&b, "\n%s: the %d message(s) just above, starting with the one this card answers: all of it, indented, cut to fit (%d characters).", label, previews, n)
	default:
		fmt.Fprintf(&b, "\n%s: the %d message(s) just above, starting with the one this card answers, exactly as they will be sent (%d characters).", label, previews, n)
	}
	if note := command.EscapesNote(p.Text, inline); note != "" {
		b.WriteString("\n" + note)
	}
	if r := command.Rendering(p.Text, p.ParseMode); r != "" && inline {
		b.WriteString("\n\n" + r)
	} else if p.ParseMode != "" {
		b.WriteString(command.Links(verifier.Render(p.Text, p.ParseMode).Links))
	}
	if reviewed {
		b.WriteString("\n\n" + reviewLine(a, previews))
	}
	return b.String()
}

// reviewLine points a card to the review page, and says what of the payload
// the card leaves out that the page shows.
func reviewLine(a *command.Approval, previews int) string {
	p := a.Operation.Payload
	var out []string
	for _, f := range p.Files {
		if f.Kind == action.FileDocument && a.Shown.Omitted == "" {
			out = append(out, fmt.Sprintf("the contents of document %q", f.Name))
		}
	}
	if p.Request != nil && previews > 0 {
		out = append(out, "the body in one piece (the messages above cut it to fit)")
	}
	if n := len([]rune(p.Before)) - tools.BeforeShown; n > 0 && p.MessageID != 0 {
		out = append(out, fmt.Sprintf("the last %d characters of the message it acts on", n))
	}
	if a.Shown.Omitted != "" {
		out = append(out, a.Shown.Omitted)
	}
	if len(out) == 0 {
		return "🔎 Whole payload (below) shows all of it on one page, under the same sha256."
	}
	return "This card leaves out " + strings.Join(out, "; ") + ". 🔎 Whole payload (below) shows them, and all the rest, on one page under the same sha256."
}

// requestApproval shows the approval card to every approver (the requester's own
// chat included when the requester is one) that has not been shown it yet, each
// with Approve and Reject, and tells a requester who is not an approver where it
// went.
//
// A tap on a card waits, under the approval's lock, until every copy is out and
// recorded, and no longer: what the requester is told comes after the lock is
// let go, so that the send a tap approves never waits for that message's turn
// in the requester's chat (the chat's pacing, behind whatever else goes there).
// It is said only while the approval still waits, under the requester's chat
// lock, which the tap's own report to that chat takes too (tellDecided): the
// requester reads that it waits before what the tap did, or only what the tap
// did.
func (t *Bot) requestApproval(ctx context.Context, requesterChat int64, requester policy.UserID, a *command.Approval) {
	previews, text := t.card(ctx, a)
	kb := t.decisionKeyboard(a.ID, a.Editable)
	unlock := t.cards.lock(a.ID)
	shown, err := t.shownIn(ctx, a.ID)
	if err != nil {
		t.log.Warn("cards not read; showing the approval again", "approval", a.ID, "err", err)
	}
	reached, sent := len(shown), 0
	for _, approver := range a.Approvers { // the task's approvers: only they can decide
		chat := privateChat(approver)
		if shown[chat] {
			continue // shown before a restart: one card per approver
		}
		if err := t.showCard(ctx, chat, a, previews, text, kb); err != nil {
			t.log.Warn("approval card not delivered", "approver", chat, "op", a.Operation.ID, "err", err)
			continue
		}
		reached, sent = reached+1, sent+1
	}
	t.closeDecided(ctx, a.ID)
	unlock()
	// Asked by a surface with no Telegram chat (an MCP client), the cards are
	// all there is to show; every card out before, the requester was told then.
	if requesterChat == 0 || (sent == 0 && reached > 0) {
		return
	}
	// What the requester is told goes between blocks of previews and their
	// card in that chat, never inside one (showCard).
	defer t.cards.lock(chatKey(requesterChat))()
	switch {
	case reached == 0:
		t.reply(ctx, requesterChat, fmt.Sprintf("%s waits for approval, but no approver could be reached (have they started a chat with the bot?). /cancel %s drops it.", a.Operation.ID, a.Operation.ID))
	case !slices.Contains(a.Approvers, requester) && t.stillWaits(ctx, a.ID):
		t.reply(ctx, requesterChat, fmt.Sprintf("%s waits for approval; the card went to %d approver(s).", a.Operation.ID, reached))
	}
}

// stillWaits reports whether approval apID waits for a decision; true when the
// journal cannot say (the requester is told it waits, as before a decision).
func (t *Bot) stillWaits(ctx context.Context, apID string) bool {
	a, err := t.journal.Approval(ctx, apID)
	return err != nil || a.Decision == journal.Pending
}

// card is the text of an approval's card, and the previews that go above it:
// none when the text it asks about is inside it, else that text as the
// messages it goes out as, or cut to fit (action.Payload.Previews), so that a
// card never holds more than one message can.
func (t *Bot) card(ctx context.Context, a *command.Approval) (previews []string, text string) {
	audience := t.audience(ctx, a.Operation.Payload, a.Shown.Audience)
	if len(a.Operation.Payload.Parts) == 0 {
		if text = cardText(a, 0, audience, t.opts.ReviewURL != ""); tools.Units(text) <= tools.MaxMessageUnits {
			return nil, text
		}
	}
	previews = tools.Previews(a.Operation.Payload)
	return previews, cardText(a, len(previews), audience, t.opts.ReviewURL != "")
}

// decisionKeyboard is the Approve and Reject buttons of approval id, and Edit
// when its payload has a text an approver may correct first; with a review
// page, a row below opens it as a Mini App.
func (t *Bot) decisionKeyboard(id string, editable bool) inlineKeyboard {
	buttons := []button{
		{Text: "✅ Approve", CallbackData: callbackData(approveKind, id, "y")},
		{Text: "❌ Reject", CallbackData: callbackData(approveKind, id, "n")}}
	if editable {
		buttons = append(buttons, button{Text: "✏️ Edit", CallbackData: callbackData(approveKind, id, editAnswer)})
	}
	kb := keyboard(buttons...)
	if t.opts.ReviewURL != "" {
		kb.InlineKeyboard = append(kb.InlineKeyboard, []button{{Text: WholePayload, WebApp: &webApp{URL: review.PageURL(t.opts.ReviewURL, id)}}})
	}
	return kb
}

// WholePayload is the label of a card's button that opens the review page.
const WholePayload = "🔎 Whole payload"

// shownIn is the set of chats a card of approval apID was recorded in.
func (t *Bot) shownIn(ctx context.Context, apID string) (map[int64]bool, error) {
	cards, err := t.journal.Cards(ctx, apID)
	shown := map[int64]bool{}
	for _, c := range cards {
		shown[c.ChatID] = true
	}
	return shown, err
}

// showCard sends one approver the card, after the previews of a text too long to
// fit in it. The previews and their card go out as one block per chat, and the card
// answers the first preview, so that two long texts at once never leave a card
// under another operation's text.
func (t *Bot) showCard(ctx context.Context, chat int64, a *command.Approval, previews []string, text string, kb models.ReplyMarkup) error {
	defer t.cards.lock(chatKey(chat))()
	first, err := t.showPhotos(ctx, chat, a.Shown.Files)
	if err != nil {
		return err
	}
	for i, part := range previews {
		m, err := t.send(ctx, chat, part, nil, 0)
		if err != nil {
			return err
		}
		if first == 0 && i == 0 {
			first = m.ID
		}
	}
	m, err := t.send(ctx, chat, text, kb, first)
	if err != nil {
		return err
	}
	// Sent: recorded even when the bot is stopping, or the card stays open
	// for good, and a later run shows it again.
	return t.journal.AddCard(context.WithoutCancel(ctx), journal.Card{Ref: a.ID, ChatID: chat, MessageID: m.ID, Text: text})
}

// audience names the chat an action reaches as its members know it: its
// title (or a person's name) and its type, as the payload holds them (bound to
// its hash when it was made), else read now with getChat. A chat the bot
// cannot read is said to be so: the approver learns that before the send
// fails. "" for no chat.
func (t *Bot) audience(ctx context.Context, p action.Payload, target string) string {
	if p.Audience != nil {
		return p.Audience.String()
	}
	chat, err := chatID(target)
	if target == "" || err != nil {
		return ""
	}
	ctx, cancel := context.WithTimeout(ctx, 5*time.Second)
	defer cancel()
	info, err := t.api.GetChat(ctx, &bot.GetChatParams{ChatID: chat})
	if err != nil {
		return "the bot cannot see this chat: " + t.redact(err.Error())
	}
	return audienceOf(info).String()
}

// audienceOf is a chat as getChat describes it.
func audienceOf(info *models.ChatFullInfo) action.Audience {
	name := info.Title
	if name == "" {
		name = strings.TrimSpace(info.FirstName + " " + info.LastName)
	}
	return action.Audience{Name: name, Username: info.Username, Type: string(info.Type)}
}

// showPhotos sends an approver the photos a payload sends, each as it will be
// sent (the stored bytes, which the payload's hash names), and returns the id of
// the first, for the card to answer. A photo that cannot be read from the store
// is not shown, and the card says the file is missing: the commit would refuse
// it too.
func (t *Bot) showPhotos(ctx context.Context, chat int64, files []action.File) (int, error) {
	first := 0
	for _, f := range files {
		if f.Kind != action.FilePhoto || t.opts.Files == nil {
			continue
		}
		b, err := t.opts.Files.Open(ctx, f.SHA256)
		if err != nil {
			t.log.Warn("photo not shown with its card", "sha256", f.SHA256, "err", err)
			continue
		}
		done, err := t.sender.limiter.Wait(ctx, strconv.FormatInt(chat, 10))
		if err != nil {
			return 0, err
		}
		m, err := t.api.SendPhoto(ctx, &bot.SendPhotoParams{ChatID: chat, Photo: &models.InputFileUpload{Filename: f.Name, Data: bytes.NewReader(b)},
			Caption: "Photo " + f.SHA256[:12] + ": the one the card below asks about."})
		done()
		if err != nil {
			return 0, errors.New(t.redact(err.Error()))
		}
		if first == 0 {
			first = m.ID
		}
	}
	return first, nil
}

// chatKey is the key of a chat in the bot's key lock, apart from approval ids.
func chatKey(chat int64) string { return "chat:" + strconv.FormatInt(chat, 10) }

// tapRequest prefixes the request name (operator.WithRequest) of a tap that
// closes its cards itself.
const tapRequest = "telegram-tap:"

// onCallback answers a tap at once, and has the command handler carry it out.
// Forged or stale data, and taps by people who may not decide, change nothing.
func (t *Bot) onCallback(ctx context.Context, cq *models.CallbackQuery) {
	tap, ok := tapOf(cq)
	if !ok {
		t.answer(ctx, cq, "This button is not known to this bot.")
		return
	}
	switch tap.Button {
	case command.Approve, command.Reject, command.Arrived, command.Lost:
		// Held until the cards are closed: every copy of the card (or notice)
		// is sent and recorded before the tap is acted on, and one sent later
		// finds the decision made (closeDecided). The tap's own events are
		// not acted on (onEvent): it closes the cards itself, with who tapped
		// and the outcome, in one edit.
		defer t.cards.lock(tap.Ref)()
		stages.Mark(ctx, stages.Unlocked)
		ctx = operator.WithRequest(ctx, tapRequest+cq.ID)
	case command.Edit:
		t.cards.lock(tap.Ref)()
	}
	// The answer says what was recorded, so it goes beside the commit: the send
	// waits for no round trip of its own.
	answered := make(chan struct{})
	tap.Answer = func(text string) {
		go func() {
			defer close(answered)
			t.answer(ctx, cq, text)
		}()
	}
	r, err := t.handler.Tap(ctx, tap)
	<-answered
	switch {
	case err != nil:
		t.log.Error("tap not carried out", "button", cq.Data, "err", err)
		t.reply(ctx, cq.From.ID, failure(err))
		return
	case r.Amend:
		t.askAmend(ctx, cq, tap.Ref)
	case r.StepUp != nil:
		t.askCode(ctx, cq.From.ID, r.StepUp)
	case r.Offer != nil:
		kb := keyboard(button{Text: fmt.Sprintf("✅ Approve these %d", len(r.Offer.Items)), CallbackData: callbackData(grantKind, tap.Ref, r.Offer.Digest)})
		if _, err := t.send(ctx, cq.From.ID, command.OfferText(*r.Offer), kb, 0); err != nil {
			t.log.Warn("grant card not sent", "task", tap.Ref, "err", err)
		}
	case r.Text != "":
		t.reply(ctx, cq.From.ID, r.Text)
	}
	if r.Close != "" {
		t.closeCards(ctx, tap.Ref, r.Close)
	}
	if r.Result != nil && (tap.Button == command.Approve || tap.Button == command.Reject) {
		t.tellDecided(ctx, tap.Ref, *r.Result, tap.Button == command.Approve)
	}
}

// onTimedCallback is onCallback with its steps timed (package stages) when
// the log shows debug lines: one line a tap says when its update arrived and
// when each step after it ended, from the inbox through the decision, the
// write-ahead and the rate limiter to the Bot API's answer to the send it
// approved, so that a slow tap is told by its slow step. Otherwise it is
// onCallback, at no cost.
func (t *Bot) onTimedCallback(ctx context.Context, j job, cq *models.CallbackQuery) {
	if j.arrived.IsZero() || !t.log.Enabled(ctx, slog.LevelDebug) {
		t.onCallback(ctx, cq)
		return
	}
	ctx, clock := stages.With(ctx, j.arrived)
	clock.MarkAt(stages.Stored, j.stored)
	stages.Mark(ctx, stages.Taken)
	t.onCallback(ctx, cq)
	stages.Mark(ctx, stages.Done)
	t.log.Debug("tap stages", "update", j.item.UpdateID, "callback", cq.ID, "arrived", j.arrived.UnixNano(), "steps", clock.String())
}

// tapOf reads what a button asks for from its callback data.
func tapOf(cq *models.CallbackQuery) (command.Tap, bool) {
	kind, id, answer, ok := parseCallback(cq.Data)
	tap := command.Tap{User: tapper(cq), Name: who(cq.From), Ref: id}
	switch {
	case !ok:
		return tap, false
	case kind == approveKind && answer == "y":
		tap.Button = command.Approve
	case kind == approveKind && answer == "n":
		tap.Button = command.Reject
	case kind == approveKind && answer == editAnswer:
		tap.Button = command.Edit
	case kind == resolveKind && answer == "d":
		tap.Button = command.Arrived
	case kind == resolveKind && answer == "n":
		tap.Button = command.Lost
	case kind == grantKind && answer == "o":
		tap.Button = command.OfferGrant
	case kind == grantKind && len(answer) == 16:
		tap.Button, tap.Code = command.Grant, answer
	default:
		return tap, false
	}
	return tap, true
}

// tellDecided tells the requester what came of a tap on approval apID, when the
// card did not. A requester whose chat holds a card has read a plain decision
// there (sent, or rejected and nothing sent), as the card was edited: one
// notice for one decision. A requester without a card (no approver) is told
// apart, and so is every requester of an outcome that asks something of them
// (unknown, failed): that one is worth a notification of its own.
func (t *Bot) tellDecided(ctx context.Context, apID string, r action.Result, approve bool) {
	chat, ok := t.taskChat(ctx, r.OperationID)
	if !ok {
		return
	}
	// After the requester was told the approval waits, if it was (requestApproval).
	defer t.cards.lock(chatKey(chat))()
	plain := r.Status == action.StatusSucceeded || !approve
	if shown, err := t.shownIn(ctx, apID); err != nil || !plain || !shown[chat] {
		t.report(ctx, chat, command.Reply{Text: command.Describe(r), Result: &r})
	}
}

func (t *Bot) answer(ctx context.Context, cq *models.CallbackQuery, text string) {
	if _, err := t.api.AnswerCallbackQuery(ctx, &bot.AnswerCallbackQueryParams{CallbackQueryID: cq.ID, Text: text}); err != nil {
		t.log.Warn("callback not answered", "err", t.redact(err.Error()))
	}
}

// closeCards edits every copy of the cards about ref: the decision is appended and
// the buttons removed. Among replicas the edit is recorded in the journal and
// made by the leader (editCards), so that cards have one writer, in order.
func (t *Bot) closeCards(ctx context.Context, ref, line string) {
	if t.journal.Replica() == "" {
		t.editCards(ctx, ref, line)
		return
	}
	if err := t.journal.AskCardEdit(ctx, ref, line); err != nil {
		t.log.Warn("card edit not recorded; the card keeps its buttons, and a tap on it is answered from the journal", "ref", ref, "err", err)
		return
	}
	select {
	case t.edits <- struct{}{}: // the leader here makes it now
	default:
	}
}

// closeDecided closes the cards of approval apID, once they are all recorded, if
// it was decided before: its decision's closeCards, run before them, found none
// or some of them to close. A decision after this read finds them all. It runs
// under the approval's lock, which a tap holds until it closed the cards.
func (t *Bot) closeDecided(ctx context.Context, apID string) {
	a, err := t.journal.Approval(ctx, apID)
	if err != nil {
		t.log.Warn("approval not read after its cards; a decision made before them leaves them open", "approval", apID, "err", err)
		return
	}
	if line := closedLine(a); line != "" { // "" while it waits
		t.editCards(ctx, apID, line)
	}
}

// makeCardEdits makes, while this replica leads and until ctx ends, the card
// edits any replica recorded, in the order they were recorded: at once when this
// replica asked for one, else within a second.
func (t *Bot) makeCardEdits(ctx context.Context) {
	tick := time.NewTicker(time.Second)
	defer tick.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-tick.C:
		case <-t.edits:
		}
		if leading, _ := t.ops.Leading(); !leading {
			continue
		}
		edits, err := t.journal.CardEdits(ctx, 64)
		if err != nil && ctx.Err() == nil {
			t.log.Warn("card edits not read", "err", err)
		}
		for _, e := range edits {
			t.editCards(ctx, e.Ref, e.Line)
			if err := t.journal.CardEditMade(ctx, e.Seq); err != nil && ctx.Err() == nil {
				t.log.Warn("card edit not marked made; it will be made again", "ref", e.Ref, "err", err)
			}
		}
	}
}

// editCards edits every copy of the cards about ref: line is appended and the
// buttons removed.
func (t *Bot) editCards(ctx context.Context, ref, line string) {
	cards, err := t.journal.Cards(ctx, ref)
	if err != nil {
		t.log.Warn("cards not found", "ref", ref, "err", err)
		return
	}
	for _, c := range cards {
		text := c.Text + "\n\n" + line
		if tools.Units(text) > tools.MaxMessageUnits {
			text = line
		}
		_, err := t.api.EditMessageText(ctx, &bot.EditMessageTextParams{ChatID: c.ChatID, MessageID: c.MessageID, Text: text,
			ReplyMarkup: noKeyboard})
		if err != nil {
			t.log.Warn("card not edited", "chat", c.ChatID, "err", t.redact(err.Error()))
		}
	}
}

// tellRequester reports an outcome in the chat of the task that asked for it.
func (t *Bot) tellRequester(ctx context.Context, opID string, reply command.Reply) {
	chat, ok := t.taskChat(ctx, opID)
	if !ok {
		return
	}
	t.report(ctx, chat, reply)
}

func (t *Bot) taskChat(ctx context.Context, opID string) (int64, bool) {
	task, err := t.taskOf(ctx, opID)
	if err != nil {
		return 0, false
	}
	return requesterChat(task)
}

func (t *Bot) taskOf(ctx context.Context, opID string) (journal.Task, error) {
	op, err := t.journal.Operation(ctx, opID)
	if err != nil {
		return journal.Task{}, err
	}
	return t.journal.Task(ctx, op.TaskID)
}

// sendUnknownNotice tells a chat that an outcome is unknown, with two buttons that
// resolve it the same way /resolve does.
func (t *Bot) sendUnknownNotice(ctx context.Context, chat int64, opID, text string) {
	defer t.cards.lock(opID)()
	kb := keyboard(
		button{Text: "It arrived", CallbackData: callbackData(resolveKind, opID, "d")},
		button{Text: "It did not arrive", CallbackData: callbackData(resolveKind, opID, "n")})
	m, err := t.send(ctx, chat, text, kb, 0)
	if err != nil {
		t.log.Warn("unknown-outcome notice not delivered", "op", opID, "err", err)
		return
	}
	if err := t.journal.AddCard(ctx, journal.Card{Ref: opID, ChatID: chat, MessageID: m.ID, Text: text}); err != nil {
		t.log.Warn("notice not recorded", "op", opID, "err", err)
	}
}

// who names a Telegram user for a card: @username or first name, with the id.
func who(u models.User) string {
	name := u.FirstName
	if u.Username != "" {
		name = "@" + u.Username
	}
	return fmt.Sprintf("%s (%d)", name, u.ID)
}

// Audience names the chat target of p as a card does (its title and type),
// for the review page to say the same.
func (t *Bot) Audience(ctx context.Context, p action.Payload, target string) string {
	return t.audience(ctx, p, target)
}
