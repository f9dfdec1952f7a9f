package standin

import (
	"context"
	"slices"
)

func (s *Server) pinChatMessage(_ context.Context, req *request) reply {
	s.mu.Lock()
	defer s.mu.Unlock()
	c, aerr := s.chats.resolve(req.params["chat_id"])
	if aerr != nil {
		return aerr.reply()
	}
	id, _ := intParam(req.params, "message_id", 0)
	if c.lookup(int(id)) == nil {
		return badRequest("message to pin not found").reply()
	}
	c.pinned = append(slices.DeleteFunc(c.pinned, func(p int) bool { return p == int(id) }), int(id))
	// Pinning posts a service message ("pinned a message"), which takes the
	// chat's next message_id; the bot gets no update for it, so the fake
	// only uses up the id.
	c.nextID()
	s.notifyLocked()
	return okReply(true)
}

// unpinChatMessage unpins message_id, or the latest pinned message when none
// is given. Unpinning a known message that is not pinned answers true.
func (s *Server) unpinChatMessage(_ context.Context, req *request) reply {
	s.mu.Lock()
	defer s.mu.Unlock()
	c, aerr := s.chats.resolve(req.params["chat_id"])
	if aerr != nil {
		return aerr.reply()
	}
	id, _ := intParam(req.params, "message_id", 0)
	switch {
	case id == 0 && len(c.pinned) == 0:
		// Telegram's wording for this case was not checked.
		return badRequest("message to unpin not found").reply()
	case id == 0:
		c.pinned = c.pinned[:len(c.pinned)-1]
	case c.lookup(int(id)) == nil:
		return badRequest("message to unpin not found").reply()
	default:
		c.pinned = slices.DeleteFunc(c.pinned, func(p int) bool { return p == int(id) })
	}
	s.notifyLocked()
	return okReply(true)
}

// chatFullInfo is getChat's answer: the chat, the fields the Bot API always
// sends, and the latest pinned message.
type chatFullInfo struct {
	Chat
	AccentColorID     int           `json:"accent_color_id"`
	MaxReactionCount  int           `json:"max_reaction_count"`
	AcceptedGiftTypes acceptedGifts `json:"accepted_gift_types"`
	PinnedMessage     *Message      `json:"pinned_message,omitempty"`
}

type acceptedGifts struct {
	UnlimitedGifts      bool `json:"unlimited_gifts"`
	LimitedGifts        bool `json:"limited_gifts"`
	UniqueGifts         bool `json:"unique_gifts"`
	PremiumSubscription bool `json:"premium_subscription"`
}

func (s *Server) getChat(_ context.Context, req *request) reply {
	s.mu.Lock()
	defer s.mu.Unlock()
	c, aerr := s.chats.resolve(req.params["chat_id"])
	if aerr != nil {
		return aerr.reply()
	}
	info := chatFullInfo{Chat: c.info, MaxReactionCount: 11}
	if m := s.pinnedLocked(c); m != nil {
		pinned := m.clone()
		info.PinnedMessage = &pinned
	}
	return okReply(info)
}

// pinnedLocked is the latest pinned message still there.
func (s *Server) pinnedLocked(c *chatState) *Message {
	for _, id := range slices.Backward(c.pinned) {
		if m := c.lookup(id); m != nil {
			return m
		}
	}
	return nil
}

// Pinned returns the ids of the messages pinned in a chat, the latest last.
func (s *Server) Pinned(chatID int64) []int {
	s.mu.Lock()
	defer s.mu.Unlock()
	c := s.chats.chats[chatID]
	if c == nil {
		return nil
	}
	return slices.Clone(c.pinned)
}
