package standin

import (
	"fmt"
	"net/http"
	"strconv"
	"strings"
)

// chatState is what the server knows about one chat.
type chatState struct {
	info       Chat
	known      bool
	blocked    bool
	migratedTo int64
	lastID     int // last message_id used in the chat, by anyone
	messages   []*Message
	incoming   []*Message // what users wrote (PushMessage)
	pinned     []int      // pinned message ids, the latest last
	member     *BotMember // the bot's standing, when set (SetBotMember)
}

// chatBook holds every chat the server has seen.
type chatBook struct {
	knownOnly bool
	chats     map[int64]*chatState
	sent      []msgRef // the bot's messages in send order
	firstID   int      // the message_id every chat counts on from (Options.FirstMessageID - 1)
}

func newChatBook(opts Options) chatBook {
	b := chatBook{knownOnly: len(opts.Chats) > 0, chats: map[int64]*chatState{}, firstID: max(opts.FirstMessageID-1, 0)}
	for _, c := range opts.Chats {
		b.add(c)
	}
	for _, id := range opts.BlockedChats {
		b.get(id).blocked = true
	}
	for from, to := range opts.MigratedChats {
		b.migrate(from, to)
	}
	return b
}

// defaultChat describes a chat nobody declared, its type following
// Telegram's id ranges.
func defaultChat(id int64) Chat {
	switch {
	case id > 0:
		return Chat{ID: id, Type: "private", FirstName: "User", Username: fmt.Sprintf("user%d", id)}
	case id <= -1_000_000_000_000:
		return Chat{ID: id, Type: "supergroup", Title: fmt.Sprintf("Supergroup %d", -id)}
	default:
		return Chat{ID: id, Type: "group", Title: fmt.Sprintf("Group %d", -id)}
	}
}

// get returns the chat's state, creating it undeclared.
func (b *chatBook) get(id int64) *chatState {
	c, ok := b.chats[id]
	if !ok {
		c = &chatState{info: defaultChat(id), lastID: b.firstID}
		b.chats[id] = c
	}
	return c
}

// add declares a chat, filling in the type and the name Telegram always
// sends (first_name of a private chat, title of the others) when missing.
func (b *chatBook) add(info Chat) *chatState {
	d := defaultChat(info.ID)
	if info.Type == "" {
		info.Type = d.Type
	}
	if info.Type == "private" && info.FirstName == "" {
		info.FirstName = d.FirstName
	}
	if info.Type != "private" && info.Title == "" {
		info.Title = fmt.Sprintf("Chat %d", info.ID)
	}
	c := b.get(info.ID)
	c.info, c.known = info, true
	return c
}

func (b *chatBook) migrate(from, to int64) {
	old := b.get(from)
	old.migratedTo, old.known = to, true
	info := old.info
	info.ID, info.Type = to, "supergroup"
	if b.chats[to] == nil || !b.chats[to].known {
		b.add(info)
	}
}

// idOf returns the chat a chat_id parameter names, 0 when it names none.
func (b *chatBook) idOf(param string) int64 {
	if id, err := strconv.ParseInt(strings.TrimSpace(param), 10, 64); err == nil {
		return id
	}
	if name, ok := strings.CutPrefix(param, "@"); ok {
		for id, c := range b.chats {
			if c.known && strings.EqualFold(c.info.Username, name) {
				return id
			}
		}
	}
	return 0
}

// resolve finds the chat a call addresses and checks the bot may write
// there.
func (b *chatBook) resolve(param string) (*chatState, *apiError) {
	if strings.TrimSpace(param) == "" {
		return nil, new(badRequest("chat_id is empty"))
	}
	id := b.idOf(param)
	if id == 0 || (b.knownOnly && (b.chats[id] == nil || !b.chats[id].known)) {
		return nil, &errChatNotFound
	}
	c := b.get(id)
	if c.migratedTo != 0 {
		return nil, new(migrated(c.migratedTo))
	}
	if c.blocked {
		return nil, new(blockedError(c.info.Type))
	}
	return c, nil
}

// blockedError is the 403 Telegram sends when the bot may no longer write
// to a chat of this type.
func blockedError(chatType string) apiError {
	switch chatType {
	case "group":
		return apiError{Code: http.StatusForbidden, Description: "Forbidden: bot was kicked from the group chat"}
	case "supergroup":
		return apiError{Code: http.StatusForbidden, Description: "Forbidden: bot was kicked from the supergroup chat"}
	case "channel":
		return apiError{Code: http.StatusForbidden, Description: "Forbidden: bot is not a member of the channel chat"}
	}
	return errBotBlocked
}

func (c *chatState) nextID() int {
	c.lastID++
	return c.lastID
}

func (c *chatState) message(id int) *Message {
	for _, m := range c.messages {
		if m.MessageID == id {
			return m
		}
	}
	return nil
}

// AddChat declares a chat (see Options.Chats). Declaring a chat does not
// by itself restrict the server to declared chats.
func (s *Server) AddChat(c Chat) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.chats.add(c)
	s.notifyLocked()
}

// BlockChat makes calls to the chat answer 403, as when the user blocked
// the bot or removed it from the group.
func (s *Server) BlockChat(id int64) { s.setBlocked(id, true) }

// UnblockChat undoes BlockChat.
func (s *Server) UnblockChat(id int64) { s.setBlocked(id, false) }

func (s *Server) setBlocked(id int64, blocked bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.chats.get(id).blocked = blocked
	s.notifyLocked()
}

// MigrateChat turns group from into supergroup to: calls to from answer
// 400 with parameters.migrate_to_chat_id, and to becomes a known chat.
func (s *Server) MigrateChat(from, to int64) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.chats.migrate(from, to)
	s.notifyLocked()
}

// Messages returns the messages the bot sent to a chat, in send order,
// including deleted ones (Deleted set).
func (s *Server) Messages(chatID int64) []Message {
	s.mu.Lock()
	defer s.mu.Unlock()
	c := s.chats.chats[chatID]
	if c == nil {
		return nil
	}
	out := make([]Message, len(c.messages))
	for i, m := range c.messages {
		out[i] = m.clone()
	}
	return out
}

// AllMessages returns every message the bot sent, in send order.
func (s *Server) AllMessages() []Message {
	s.mu.Lock()
	defer s.mu.Unlock()
	out := make([]Message, 0, len(s.chats.sent))
	for _, ref := range s.chats.sent {
		out = append(out, s.chats.chats[ref.chatID].message(ref.messageID).clone())
	}
	return out
}

// Message returns one message the bot sent.
func (s *Server) Message(chatID int64, messageID int) (Message, bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	c := s.chats.chats[chatID]
	if c == nil {
		return Message{}, false
	}
	m := c.message(messageID)
	if m == nil {
		return Message{}, false
	}
	return m.clone(), true
}

// replyLost marks committed messages whose call got no response.
func (s *Server) replyLost(refs []msgRef) {
	s.mu.Lock()
	defer s.mu.Unlock()
	for _, ref := range refs {
		if c := s.chats.chats[ref.chatID]; c != nil {
			if m := c.message(ref.messageID); m != nil {
				m.ReplyLost = true
				s.notifyLocked()
			}
		}
	}
}

// postLocked stamps m as the bot's next message in c and records it.
func (s *Server) postLocked(c *chatState, m *Message) msgRef {
	m.MessageID, m.From, m.Chat, m.Date = c.nextID(), &s.bot, c.info, s.now().Unix()
	c.messages = append(c.messages, m)
	ref := msgRef{chatID: c.info.ID, messageID: m.MessageID}
	s.chats.sent = append(s.chats.sent, ref)
	s.notifyLocked()
	return ref
}

// lookup finds a message the server knows in c: the bot's, or one a user
// wrote; nil when there is none or it was deleted.
func (c *chatState) lookup(id int) *Message {
	m := c.message(id)
	if m == nil {
		for _, in := range c.incoming {
			if in.MessageID == id {
				m = in
			}
		}
	}
	if m == nil || m.Deleted {
		return nil
	}
	return m
}
