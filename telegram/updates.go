package telegram

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/go-telegram/bot"
	"github.com/go-telegram/bot/models"

	"github.com/countersign/countersign/action"
	"github.com/countersign/countersign/command"
	"github.com/countersign/countersign/journal"
	"github.com/countersign/countersign/secret"
)

// job is a stored update, decoded, waiting for a worker.
type job struct {
	item   journal.InboxItem
	update models.Update
	tries  int // times a full disk sent it back
	// arrived is when the update reached this process, stored when the inbox
	// had it; zero for an update replayed from the inbox.
	arrived, stored time.Time
}

// laneQueue is how many updates may wait for a worker in each lane; beyond it,
// dispatch waits, and the poller with it (Telegram keeps what it has not confirmed).
const laneQueue = 256

// dispatch queues one stored update for its lane's workers: callback queries and
// messages have workers of their own, so that a long commit or a busy agent turn
// never holds up an approval tap, and a flood of messages starts no more work at
// once than there are workers. An update still queued when ctx ends stays
// unhandled in the inbox and is handled after a restart. arrived and stored
// time the steps of a tap (zero for an update replayed from the inbox).
func (t *Bot) dispatch(ctx context.Context, it journal.InboxItem, arrived, stored time.Time) {
	j := job{item: it, arrived: arrived, stored: stored}
	var err error
	if j.update, err = decodeUpdate(it.Body); err != nil {
		t.log.Warn("update not understood; skipped", "update", it.UpdateID, "err", err)
	}
	t.queue(ctx, j)
}

// queue hands a decoded job to its lane.
func (t *Bot) queue(ctx context.Context, j job) {
	lane := t.messages
	if j.update.CallbackQuery != nil {
		lane = t.taps
	}
	select {
	case lane <- j:
	case <-ctx.Done():
	}
}

// decodeUpdate reads a stored update as its handlers see it.
func decodeUpdate(body []byte) (models.Update, error) {
	var u models.Update
	err := json.Unmarshal(body, &u)
	return u, err
}

// startWorkers starts the workers of both lanes and the sender of refusals; Serve
// waits for them.
func (t *Bot) startWorkers(ctx context.Context) {
	t.chats = newChatTurns(t.opts.MessageWorkers)
	for lane, n := range map[chan job]int{t.messages: t.opts.MessageWorkers, t.taps: t.opts.TapWorkers} {
		for range n {
			t.spawn(func() { t.handleFrom(ctx, lane) })
		}
	}
	t.spawn(func() { t.sendRefusals(ctx) })
	t.spawn(func() {
		<-ctx.Done()
		t.chats.stop()
	})
}

// handleFrom handles updates from lane until ctx ends, and marks each handled when done.
// A restart replays the updates not marked; task origins and single-use approvals
// make a replay harmless. One chat has at most half the workers (chatTurns): a
// message of a chat that has them waits in its backlog, and this worker takes
// the next update.
func (t *Bot) handleFrom(ctx context.Context, lane <-chan job) {
	for {
		var j job
		select {
		case <-ctx.Done():
			return
		case j = <-lane:
		}
		m := j.update.Message
		if m == nil || j.update.CallbackQuery != nil {
			t.handle(ctx, j)
			continue
		}
		if !t.chats.begin(m.Chat.ID, j) {
			continue
		}
		for ok := true; ok; j, ok = t.chats.next(m.Chat.ID) {
			if ctx.Err() != nil {
				return // what waits behind stays unhandled in the inbox, for the replay after a restart
			}
			t.handle(ctx, j)
		}
	}
}

// handle handles one update and marks it handled, or gives a message that met
// a full disk to again.
func (t *Bot) handle(serving context.Context, j job) {
	ctx := context.WithoutCancel(serving) // finish what was started; Serve waits for it
	u := j.update
	full := false
	switch {
	case u.CallbackQuery != nil:
		t.onTimedCallback(ctx, j, u.CallbackQuery)
	case u.Message != nil && (u.Message.Text != "" || u.Message.Caption != ""):
		full = t.onMessage(ctx, j.item.Key, u.Message, j.tries == 0)
	}
	if full {
		t.again(serving, j)
		return
	}
	if err := t.journal.Handled(ctx, j.item.Key); err != nil {
		t.log.Error("update not marked handled; it will be handled again after a restart", "update", j.item.UpdateID, "err", err)
	}
}

// again takes a message that met a full disk (or a database out of reach) once
// more after a wait (1 s, doubling to 30 s) until the journal takes it; it stays unhandled in the inbox
// meanwhile, so a stop before then leaves it to the replay after a restart. Its
// task's origin makes the retry start no second task.
func (t *Bot) again(ctx context.Context, j job) {
	wait := min(time.Second<<min(j.tries, 5), 30*time.Second)
	j.tries++
	t.spawn(func() {
		if sleep(ctx, wait) == nil {
			t.queue(ctx, j)
		}
	})
}

// updateKey names what an update carries, for the inbox: its message (chat and
// message id) or its callback query, and only otherwise its number. Telegram may
// number updates afresh after a week without any, so an update_id seen last week
// can carry a new message this week; a redelivered update carries the same one.
// journal/migrations/sqlite/0004_inbox_key.sql gives rows stored before keys the same keys.
func updateKey(id int64, body []byte) string {
	var u struct {
		Message *struct {
			ID   int64 `json:"message_id"`
			Chat struct {
				ID int64 `json:"id"`
			} `json:"chat"`
		} `json:"message"`
		CallbackQuery *struct {
			ID string `json:"id"`
		} `json:"callback_query"`
	}
	if json.Unmarshal(body, &u) == nil {
		switch {
		case u.Message != nil && u.Message.ID != 0 && u.Message.Chat.ID != 0:
			return fmt.Sprintf("message:%d:%d", u.Message.Chat.ID, u.Message.ID)
		case u.CallbackQuery != nil && u.CallbackQuery.ID != "":
			return "callback_query:" + u.CallbackQuery.ID
		}
	}
	return fmt.Sprintf("update:%d", id)
}

// replay hands the updates whose handling a previous process did not finish to
// their handlers again. A replica takes those its name left, and those of
// replicas whose lease is past; the rest are live replicas' own.
func (t *Bot) replay(ctx context.Context) error {
	if t.journal.Replica() != "" {
		return t.claim(ctx, true)
	}
	items, err := t.journal.Unhandled(ctx)
	if err != nil {
		return err
	}
	for _, it := range items {
		t.dispatch(ctx, it, time.Time{}, time.Time{})
	}
	return nil
}

// claimBatch is how many unhandled updates a replica claims at a time.
const claimBatch = 64

// claim claims the unhandled updates free to this replica (with own, those its
// name left too) and hands them to their handlers.
func (t *Bot) claim(ctx context.Context, own bool) error {
	for {
		items, err := t.journal.ClaimUpdates(ctx, claimBatch, own)
		if err != nil {
			return err
		}
		for _, it := range items {
			t.dispatch(ctx, it, time.Time{}, time.Time{})
		}
		if len(items) < claimBatch {
			return nil
		}
	}
}

// takeOver claims, every second until ctx ends, the updates another replica
// received and never handled, once its lease is past: it died with them.
func (t *Bot) takeOver(ctx context.Context) {
	for sleep(ctx, time.Second) == nil {
		if err := t.claim(ctx, false); err != nil && ctx.Err() == nil {
			t.log.Warn("updates of a stopped replica not claimed", "err", err)
		}
	}
}

// typing shows "typing…" in chat until the returned function is called; Telegram
// clears it after about 5 seconds, so it is sent again every 4.
func (t *Bot) typing(ctx context.Context, chat int64) (stop func()) {
	ctx, cancel := context.WithCancel(ctx)
	show := func() {
		if _, err := t.api.SendChatAction(ctx, &bot.SendChatActionParams{ChatID: chat, Action: models.ChatActionTyping}); err != nil && ctx.Err() == nil {
			t.log.Debug("typing action not sent", "chat", chat, "err", t.redact(err.Error()))
		}
	}
	show()
	done := make(chan struct{})
	go func() {
		defer close(done)
		for sleep(ctx, 4*time.Second) == nil {
			show()
		}
	}()
	return func() {
		cancel()
		<-done
	}
}

// failure words, for the person who asked, an error of the bot's own: a full disk
// is theirs to fix; anything else is in the log. Either way a step that could not be
// journaled did not leave, and what was underway shows in /pending.
func failure(err error) string {
	if journal.IsFull(err) {
		return "The bot's disk is full, so it could not journal this step, and nothing leaves unjournaled. Free some space, then check /pending before you try again."
	}
	return "Something went wrong on the bot's side; the log has the details. Check /pending before you try again."
}

// waitingForRoom is what the person who sent a message is told, once, when a full
// disk kept it from being journaled: the bot takes it again by itself.
const waitingForRoom = "The bot's disk is full, so it could not journal this message yet, and nothing leaves unjournaled. It takes the message again by itself once there is room: there is no need to send it again (a model's turn that had begun is not run twice; /pending shows what it left)."

// onMessage carries out an operator's command or plain text. key is the inbox key
// of its update, which names the task's origin: a replay of the update starts no
// second task, and a message that Telegram numbered afresh is not taken for one.
// It reports whether a full disk stopped it, to be taken again once there is room
// (the person is told so when tell is true: the first time), or a database out
// of reach, to be taken again the same way.
func (t *Bot) onMessage(ctx context.Context, key string, m *models.Message, tell bool) (full bool) {
	if m.From == nil || m.Chat.Type != models.ChatTypePrivate {
		return false // commands are taken in private chats only
	}
	line, attachment := m.Text, ""
	if amend, ok := t.amendLine(ctx, m); ok {
		line = amend // the new text of a request, a reply to its Edit prompt
	}
	if code, ok := t.codeLine(ctx, m); ok {
		line = code // an approver's code, a reply to its prompt
	}
	if isWhoAmI(line) {
		t.whoami(ctx, m)
		return false
	}
	if !t.policy.Access.IsOperator(author(m)) && !t.mayApproveByCommand(line, author(m)) {
		if t.pairing != nil {
			t.offerPairing(ctx, m) // whatever a newcomer says first, while nobody operates
			return false
		}
		t.refuse(ctx, m.Chat.ID, author(m))
		return false
	}
	if line == "" && m.Caption != "" { // a file sent with a command as its caption
		line = m.Caption
		switch {
		case len(m.Photo) > 0:
			attachment = m.Photo[len(m.Photo)-1].FileID // the largest size
		case m.Document != nil:
			attachment = m.Document.FileID
		}
	}
	if strings.Contains(line, secret.Withheld) {
		t.reply(ctx, m.Chat.ID, "That message contained what looks like a secret (a bot token or an API key), so it was neither stored nor sent. If it was this bot's token, revoke it with @BotFather.")
		return false
	}
	if c, err := command.Parse(line); err == nil && c.Name == "code" {
		t.confirmCode(ctx, m, c)
		return false
	}
	req := command.Request{User: author(m), Chat: strconv.FormatInt(m.Chat.ID, 10), Line: line,
		Origin: "telegram:" + key, Attachment: attachment}
	if t.handler.Agent != nil && !strings.HasPrefix(strings.TrimSpace(line), "/") {
		defer t.typing(ctx, m.Chat.ID)() // a model's turn takes seconds: show that it is working
	}
	// The cards a request asks for are shown from the operator's events, in
	// this chat only once its reply is out.
	replied := t.replies.begin(m.Chat.ID)
	defer replied()
	reply, err := t.handler.Handle(ctx, req)
	switch {
	case errors.Is(err, journal.ErrDuplicate):
		return false // handled before a restart
	case errors.Is(err, command.ErrUsage):
		t.reply(ctx, m.Chat.ID, err.Error())
		return false
	case journal.IsFull(err):
		t.log.Error("command not journaled: the disk is full; it is taken again once there is room", "err", err)
		if tell {
			t.reply(ctx, m.Chat.ID, waitingForRoom)
		}
		return true
	case journal.IsUnreachable(err):
		// Marked handled, it would be lost: its task may not exist. Taken
		// again, it goes on from what was made (its task's origin).
		t.log.Error("command not journaled: the database is out of reach; it is taken again", "err", err)
		return true
	case err != nil:
		t.log.Error("command failed", "err", err)
		t.reply(ctx, m.Chat.ID, failure(err))
		return false
	}
	if reply.Text != "" {
		t.report(ctx, m.Chat.ID, reply)
	}
	replied()
	if reply.Pending {
		t.pendingButtons(ctx, m.Chat.ID, author(m), reply.Listed)
		t.grantButtons(ctx, m.Chat.ID, reply.Listed)
	}
	return false
}

// report tells a chat what came of an operation, with the resolve buttons when its
// outcome is unknown.
func (t *Bot) report(ctx context.Context, chat int64, reply command.Reply) {
	if reply.Result == nil || reply.Result.SideEffect != action.SideEffectUnknown {
		t.reply(ctx, chat, reply.Text)
		return
	}
	t.sendUnknownNotice(ctx, chat, reply.Result.OperationID, reply.Text)
}
