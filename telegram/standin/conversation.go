package standin

import (
	"cmp"
	"slices"
)

// Conversation returns a chat as the people in it see it: the bot's messages
// and the ones users wrote (PushMessage, PushReply; Incoming set), in
// message_id order, deleted ones included (Deleted set). Messages only lists
// the bot's side, which is what most tests check; a view that draws the chat,
// as countersign demo does, needs both sides in the order they were written.
func (s *Server) Conversation(chatID int64) []Message {
	s.mu.Lock()
	defer s.mu.Unlock()
	c := s.chats.chats[chatID]
	if c == nil {
		return nil
	}
	out := make([]Message, 0, len(c.messages)+len(c.incoming))
	for _, m := range c.messages {
		out = append(out, m.clone())
	}
	for _, m := range c.incoming {
		out = append(out, m.clone())
	}
	slices.SortStableFunc(out, func(a, b Message) int { return cmp.Compare(a.MessageID, b.MessageID) })
	return out
}
