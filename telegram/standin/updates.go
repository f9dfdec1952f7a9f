package standin

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"slices"
	"strconv"
	"strings"
	"time"
)

// excludedByDefault are the update types not delivered while
// allowed_updates was never set, as the Bot API documents.
var excludedByDefault = []string{"chat_member", "message_reaction", "message_reaction_count"}

// errWebhookActive is the 409 getUpdates gets while a webhook is set.
var errWebhookActive = apiError{
	Code:        http.StatusConflict,
	Description: "Conflict: can't use getUpdates method while webhook is active; use deleteWebhook to delete the webhook first",
}

type queuedUpdate struct {
	id        int64
	kind      string // the update's type field: "message", "callback_query", ...
	raw       json.RawMessage
	delivered bool // a getUpdates call returned it
}

// updateQueue holds updates until an offset confirms them.
type updateQueue struct {
	next    int64
	pending []queuedUpdate
	unread  []int64  // confirmed before any getUpdates returned them
	allowed []string // nil until a getUpdates or setWebhook sets it
	polling bool
	// poll is closed to end the getUpdates held open now: a newer one
	// terminates it, as Telegram does.
	poll    chan struct{}
	queries int
	// handedOut is when a getUpdates response first carried each update.
	handedOut map[int64]time.Time
}

func (q *updateQueue) init(first int64) {
	q.next = max(first, 1)
}

func (q *updateQueue) isAllowed(kind string) bool {
	if len(q.allowed) == 0 {
		return !slices.Contains(excludedByDefault, kind)
	}
	return slices.Contains(q.allowed, kind)
}

// confirm forgets updates below offset; a negative offset keeps only the
// last -offset updates. Updates forgotten before any call returned them are
// recorded as lost.
func (q *updateQueue) confirm(offset int64) {
	forget := func(u queuedUpdate) bool {
		if !u.delivered {
			q.unread = append(q.unread, u.id)
		}
		return true
	}
	switch {
	case offset > 0:
		q.pending = slices.DeleteFunc(q.pending, func(u queuedUpdate) bool { return u.id < offset && forget(u) })
	case offset < 0 && int64(len(q.pending)) > -offset:
		cut := int64(len(q.pending)) + offset
		for _, u := range q.pending[:cut] {
			forget(u)
		}
		q.pending = slices.Clone(q.pending[cut:])
	}
}

// deliverable drops updates of types not allowed and returns up to limit
// of the rest. They stay queued until confirmed.
func (q *updateQueue) deliverable(limit int, now time.Time) []json.RawMessage {
	q.pending = slices.DeleteFunc(q.pending, func(u queuedUpdate) bool { return !q.isAllowed(u.kind) })
	out := make([]json.RawMessage, 0, min(limit, len(q.pending)))
	for i := range q.pending[:min(limit, len(q.pending))] {
		if !q.pending[i].delivered {
			if q.handedOut == nil {
				q.handedOut = map[int64]time.Time{}
			}
			q.handedOut[q.pending[i].id] = now
		}
		q.pending[i].delivered = true
		out = append(out, q.pending[i].raw)
	}
	return out
}

// PushUpdate queues an update for getUpdates and returns the update_id it
// was given (any update_id in it is replaced). update is a JSON object as
// json.RawMessage, []byte or string, or any value that marshals to one
// (a map, a go-telegram models.Update). It panics if update is not a JSON
// object with a type field.
func (s *Server) PushUpdate(update any) int64 {
	kind, body := updateBody(update)
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.enqueueLocked(kind, body)
}

// updateBody returns the update's type and its fields without update_id,
// encoded as a JSON object.
func updateBody(update any) (string, map[string]json.RawMessage) {
	var raw []byte
	switch u := update.(type) {
	case json.RawMessage:
		raw = u
	case []byte:
		raw = u
	case string:
		raw = []byte(u)
	default:
		b, err := json.Marshal(update)
		if err != nil {
			panic(fmt.Sprintf("standin: PushUpdate: %v", err))
		}
		raw = b
	}
	var fields map[string]json.RawMessage
	if err := json.Unmarshal(raw, &fields); err != nil {
		panic(fmt.Sprintf("standin: PushUpdate: not a JSON object: %v", err))
	}
	delete(fields, "update_id")
	for k, v := range fields {
		if string(v) != "null" {
			return k, fields
		}
	}
	panic("standin: PushUpdate: update has no type field")
}

// enqueueLocked assigns the next update_id and queues the update, written
// with update_id first as Telegram does.
func (s *Server) enqueueLocked(kind string, fields map[string]json.RawMessage) int64 {
	id := s.queue.next
	s.queue.next++
	var b strings.Builder
	fmt.Fprintf(&b, `{"update_id":%d`, id)
	for _, k := range slices.Sorted(func(yield func(string) bool) {
		for k, v := range fields {
			if string(v) != "null" && !yield(k) {
				return
			}
		}
	}) {
		key, _ := json.Marshal(k)
		fmt.Fprintf(&b, ",%s:%s", key, fields[k])
	}
	b.WriteString("}")
	s.queue.pending = append(s.queue.pending, queuedUpdate{id: id, kind: kind, raw: json.RawMessage(b.String())})
	s.notifyLocked()
	return id
}

// pushLocked queues a typed update object under field kind.
func (s *Server) pushLocked(kind string, v any) int64 {
	raw, err := json.Marshal(v)
	if err != nil {
		panic(fmt.Sprintf("standin: encode %s update: %v", kind, err))
	}
	return s.enqueueLocked(kind, map[string]json.RawMessage{kind: raw})
}

// PendingUpdates returns the update_ids queued and not yet confirmed.
func (s *Server) PendingUpdates() []int64 {
	s.mu.Lock()
	defer s.mu.Unlock()
	ids := make([]int64, len(s.queue.pending))
	for i, u := range s.queue.pending {
		ids[i] = u.id
	}
	return ids
}

// HandedOut is when a getUpdates response first carried update id, on the
// server's clock: the moment the bot could first see it, for latency measured
// from there.
func (s *Server) HandedOut(id int64) (time.Time, bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	t, ok := s.queue.handedOut[id]
	return t, ok
}

// Renumber makes the next pushed update take update_id next, as Telegram may
// number updates afresh after a week without any: the new ids may be below
// the ones a bot has seen, so an offset above them confirms them unread.
func (s *Server) Renumber(next int64) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.queue.next = next
}

// RenumberPending gives every update still queued a new update_id, from next on,
// in order, and numbers the updates pushed after them on from there: Telegram
// numbering afresh what it still holds, as it may after a quiet spell, so that a
// bot sees the same messages and taps again under ids it never saw. It returns
// the new ids.
func (s *Server) RenumberPending(next int64) []int64 {
	s.mu.Lock()
	defer s.mu.Unlock()
	next = max(next, 1)
	ids := make([]int64, len(s.queue.pending))
	for i := range s.queue.pending {
		u := &s.queue.pending[i]
		var fields map[string]json.RawMessage
		if err := json.Unmarshal(u.raw, &fields); err != nil {
			panic(fmt.Sprintf("standin: RenumberPending: %v", err))
		}
		fields["update_id"] = json.RawMessage(strconv.FormatInt(next, 10))
		raw, err := json.Marshal(fields)
		if err != nil {
			panic(fmt.Sprintf("standin: RenumberPending: %v", err))
		}
		u.id, u.raw, ids[i] = next, raw, next
		next++
	}
	s.queue.next = next
	s.notifyLocked()
	return ids
}

// ConfirmedUnread returns the update_ids that an offset confirmed (or a
// negative offset dropped) before any getUpdates call returned them: the
// updates a bot lost. Updates dropped by drop_pending_updates are not counted.
func (s *Server) ConfirmedUnread() []int64 {
	s.mu.Lock()
	defer s.mu.Unlock()
	return slices.Clone(s.queue.unread)
}

// AllowedUpdates returns the sticky allowed_updates list, nil if no call
// ever set it.
func (s *Server) AllowedUpdates() []string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return slices.Clone(s.queue.allowed)
}

// Polling reports whether a getUpdates call is being held open.
func (s *Server) Polling() bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.queue.polling
}

// pollParams are the parsed getUpdates parameters.
type pollParams struct {
	offset  int64
	limit   int
	timeout time.Duration
	allowed []string // nil when not given
}

func parsePoll(params map[string]string) (pollParams, *apiError) {
	var p pollParams
	var ok [3]bool
	var limit, timeout int64
	p.offset, ok[0] = intParam(params, "offset", 0)
	limit, ok[1] = intParam(params, "limit", 100)
	timeout, ok[2] = intParam(params, "timeout", 0)
	if slices.Contains(ok[:], false) {
		return p, new(badRequest("invalid getUpdates parameters"))
	}
	p.limit = int(min(max(limit, 1), 100))
	p.timeout = time.Duration(max(timeout, 0)) * time.Second
	if v, given := params["allowed_updates"]; given && v != "" {
		list, err := stringList(v)
		if err != nil {
			return p, new(badRequest("can't parse allowed updates"))
		}
		p.allowed = list
	}
	return p, nil
}

// getUpdates answers with pending updates, holding the call up to its
// timeout while there are none. One poller at a time, as on Telegram: a newer
// call terminates the one held open, which is answered 409 ("terminated by
// other getUpdates request"), and goes on itself.
func (s *Server) getUpdates(ctx context.Context, req *request) reply {
	p, aerr := parsePoll(req.params)
	if aerr != nil {
		return aerr.reply()
	}
	kick, aerr := s.startPoll(p)
	if aerr != nil {
		return aerr.reply()
	}
	defer s.endPoll(kick)
	batch, terminated := s.waitUpdates(ctx, p, kick)
	if terminated {
		return errConflict.reply()
	}
	return okReply(batch)
}

func (s *Server) startPoll(p pollParams) (chan struct{}, *apiError) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.webhook.URL != "" {
		return nil, &errWebhookActive
	}
	if s.queue.polling {
		close(s.queue.poll)
	}
	s.queue.polling, s.queue.poll = true, make(chan struct{})
	s.queue.confirm(p.offset)
	if p.allowed != nil {
		s.queue.allowed = p.allowed
	}
	s.notifyLocked()
	return s.queue.poll, nil
}

// endPoll ends the poll kick belongs to, unless a newer one took its place.
func (s *Server) endPoll(kick chan struct{}) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.queue.poll == kick {
		s.queue.polling, s.queue.poll = false, nil
	}
	s.notifyLocked()
}

// waitUpdates returns the updates p asks for, once there are some or its
// timeout passed; terminated when a newer poll ended it (kick closed).
func (s *Server) waitUpdates(ctx context.Context, p pollParams, kick <-chan struct{}) (batch []json.RawMessage, terminated bool) {
	var expired <-chan time.Time
	if p.timeout > 0 {
		t := time.NewTimer(p.timeout)
		defer t.Stop()
		expired = t.C
	}
	for {
		s.mu.Lock()
		select {
		case <-kick:
			s.mu.Unlock()
			return nil, true
		default:
		}
		if p.offset > 0 {
			s.queue.confirm(p.offset)
		}
		batch := s.queue.deliverable(p.limit, s.now())
		changed := s.changed
		s.mu.Unlock()
		if len(batch) > 0 || p.timeout == 0 {
			return batch, false
		}
		select {
		case <-changed:
		case <-kick:
			return nil, true
		case <-expired:
			return batch, false
		case <-ctx.Done():
			return batch, false
		case <-s.done:
			return batch, false
		}
	}
}

// userForLocked describes the user behind id, taking names from a declared
// private chat with the same id.
func (s *Server) userForLocked(id int64) User {
	u := User{ID: id, FirstName: "User", Username: fmt.Sprintf("user%d", id), LanguageCode: "en"}
	if c := s.chats.chats[id]; c != nil && c.known && c.info.Type == "private" {
		u.FirstName, u.LastName, u.Username = c.info.FirstName, c.info.LastName, c.info.Username
	}
	return u
}

// incomingMessage is a message a user sent, shaped as in
// testdata/update_private_text_message.json.
type incomingMessage struct {
	MessageID int      `json:"message_id"`
	From      User     `json:"from"`
	Chat      Chat     `json:"chat"`
	Date      int64    `json:"date"`
	Text      string   `json:"text"`
	Entities  []Entity `json:"entities,omitempty"`
	// ReplyTo is the message this one replies to, as Telegram embeds it.
	ReplyTo *Message `json:"reply_to_message,omitempty"`
}

// PushMessage queues a "message" update: user userID wrote text in chat
// chatID (the private chat with the bot when chatID == userID). The chat
// becomes known and the message takes the chat's next message_id. A
// leading /command gets its bot_command entity. It returns the update_id.
func (s *Server) PushMessage(userID, chatID int64, text string) int64 {
	s.mu.Lock()
	defer s.mu.Unlock()
	c := s.chats.get(chatID)
	c.known = true
	msg := incomingMessage{
		MessageID: c.nextID(),
		From:      s.userForLocked(userID),
		Chat:      c.info,
		Date:      s.now().Unix(),
		Text:      text,
	}
	if strings.HasPrefix(text, "/") {
		cmd := strings.Fields(text)[0]
		msg.Entities = []Entity{{Type: "bot_command", Offset: 0, Length: utf16Len(cmd)}}
	}
	from := msg.From
	c.incoming = append(c.incoming, &Message{
		MessageID: msg.MessageID, From: &from, Chat: msg.Chat, Date: msg.Date,
		Text: msg.Text, Entities: msg.Entities, Incoming: true,
	})
	return s.pushLocked("message", msg)
}

// PushReply queues a "message" update as PushMessage does, replying to the
// message to of the same chat (one the bot sent, most often: a ForceReply
// prompt), which the update embeds as reply_to_message.
func (s *Server) PushReply(userID, chatID int64, to int, text string) int64 {
	s.mu.Lock()
	defer s.mu.Unlock()
	c := s.chats.get(chatID)
	c.known = true
	msg := incomingMessage{MessageID: c.nextID(), From: s.userForLocked(userID), Chat: c.info, Date: s.now().Unix(), Text: text}
	if m := c.message(to); m != nil {
		quoted := *m
		msg.ReplyTo = &quoted
	}
	from := msg.From
	c.incoming = append(c.incoming, &Message{MessageID: msg.MessageID, From: &from, Chat: msg.Chat, Date: msg.Date, Text: msg.Text, Incoming: true})
	return s.pushLocked("message", msg)
}

// callbackQuery is shaped as in testdata/update_callback_query.json.
type callbackQuery struct {
	ID           string `json:"id"`
	From         User   `json:"from"`
	Message      any    `json:"message,omitempty"`
	ChatInstance string `json:"chat_instance"`
	Data         string `json:"data"`
}

// inaccessibleMessage stands for a message the bot can no longer see.
type inaccessibleMessage struct {
	Chat      Chat  `json:"chat"`
	MessageID int   `json:"message_id"`
	Date      int64 `json:"date"`
}

// PushCallbackQuery queues a "callback_query" update: user userID pressed
// a button carrying data under message messageID of chat chatID. The
// update carries the bot's message as recorded (or an inaccessible
// message, date 0, if there is none or it was deleted). It returns the
// update_id and the query id to answer.
func (s *Server) PushCallbackQuery(userID, chatID int64, messageID int, data string) (int64, string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	c := s.chats.get(chatID)
	c.known = true
	s.queue.queries++
	q := callbackQuery{
		ID:           strconv.FormatUint(4_000_000_000_000_000_000+uint64(s.queue.queries), 10),
		From:         s.userForLocked(userID),
		Message:      inaccessibleMessage{Chat: c.info, MessageID: messageID},
		ChatInstance: strconv.FormatInt(chatID*7919+104729, 10),
		Data:         data,
	}
	if m := c.message(messageID); m != nil && !m.Deleted {
		q.Message = m
	}
	s.queries[q.ID] = s.now()
	return s.pushLocked("callback_query", q), q.ID
}
