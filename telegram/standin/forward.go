package standin

import "context"

// sourceLocked finds the message copyMessage or forwardMessage names in
// from_chat_id: one the bot sent or one a user wrote there.
func (s *Server) sourceLocked(p map[string]string, notFound string) (*Message, *apiError) {
	from, aerr := s.chats.resolve(p["from_chat_id"])
	if aerr != nil {
		return nil, aerr
	}
	id, ok := intParam(p, "message_id", 0)
	if !ok || id == 0 {
		return nil, new(badRequest("message identifier is not specified"))
	}
	m := from.lookup(int(id))
	if m == nil {
		return nil, new(badRequest("%s", notFound))
	}
	return m, nil
}

// repost is a new message of the bot carrying src's content.
func repost(src *Message) *Message {
	c := src.clone()
	return &Message{
		Text: c.Text, Entities: c.Entities, Photo: c.Photo, Document: c.Document,
		Caption: c.Caption, CaptionEntities: c.CaptionEntities, Poll: c.Poll,
		RawText: c.RawText, ParseMode: c.ParseMode,
	}
}

// copyMessage posts a copy of a known message, with no link to it, and
// answers its MessageId. caption, when given, replaces a media caption.
func (s *Server) copyMessage(_ context.Context, req *request) reply {
	p := req.params
	markup, aerr := parseMarkup(p["reply_markup"])
	if aerr != nil {
		return aerr.reply()
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	src, aerr := s.sourceLocked(p, "message to copy not found")
	var c *chatState
	if aerr == nil {
		c, aerr = s.chats.resolvePost(p["chat_id"])
	}
	m := new(Message)
	if aerr == nil {
		m = repost(src)
		if _, given := p["caption"]; given && (m.Photo != nil || m.Document != nil) {
			var cap caption
			cap, aerr = readCaption(p)
			m.Caption, m.CaptionEntities, m.RawText, m.ParseMode = cap.text, cap.entities, cap.raw, cap.parseMode
		}
	}
	if aerr == nil {
		m.ReplyTo, aerr = replyTarget(c, p["reply_parameters"])
	}
	if aerr == nil {
		aerr = s.floodLocked(c.info.ID, 1)
	}
	if aerr != nil {
		return aerr.reply()
	}
	m.ReplyMarkup, m.Silent = markup, boolParam(p, "disable_notification")
	ref := s.postLocked(c, m)
	rep := okReply(struct {
		MessageID int `json:"message_id"`
	}{m.MessageID})
	rep.committed = []msgRef{ref}
	return rep
}

// forwardMessage posts a known message again with its forward_origin: the
// original sender (or channel), kept through forwards of forwards.
func (s *Server) forwardMessage(_ context.Context, req *request) reply {
	p := req.params
	s.mu.Lock()
	defer s.mu.Unlock()
	src, aerr := s.sourceLocked(p, "message to forward not found")
	var c *chatState
	if aerr == nil {
		c, aerr = s.chats.resolvePost(p["chat_id"])
	}
	if aerr == nil {
		aerr = s.floodLocked(c.info.ID, 1)
	}
	if aerr != nil {
		return aerr.reply()
	}
	m := repost(src)
	m.ForwardOrigin, m.Silent = origin(src), boolParam(p, "disable_notification")
	ref := s.postLocked(c, m)
	rep := okReply(m)
	rep.committed = []msgRef{ref}
	return rep
}

func origin(src *Message) *Origin {
	if src.ForwardOrigin != nil {
		o := src.ForwardOrigin.clone()
		return &o
	}
	if src.Chat.Type == "channel" {
		chat := src.Chat
		return &Origin{Type: "channel", Date: src.Date, Chat: &chat, MessageID: src.MessageID}
	}
	from := *src.From
	return &Origin{Type: "user", Date: src.Date, SenderUser: &from}
}
