package standin

import (
	"context"
	"net/http"
	"strconv"
)

// BotMember is the bot's standing in a chat, as getChatMember tells it
// (Telegram's ChatMember): Status is "creator", "administrator", "member",
// "restricted", "left" or "kicked". An administrator of a channel posts only
// with CanPostMessages; a restricted member only with CanSendMessages.
type BotMember struct {
	Status          string
	CanPostMessages bool
	CanSendMessages bool
}

// defaultMember is the bot's standing in a chat nobody set it for: an
// administrator that posts in a channel (a bot posts in a channel only as
// one), a member anywhere else.
func defaultMember(chatType string) BotMember {
	if chatType == "channel" {
		return BotMember{Status: "administrator", CanPostMessages: true}
	}
	return BotMember{Status: "member"}
}

// SetBotMember sets the bot's standing in a chat (see BotMember): what
// getChatMember answers for the bot, and whether the chat takes its posts.
func (s *Server) SetBotMember(chatID int64, m BotMember) {
	s.mu.Lock()
	defer s.mu.Unlock()
	c := s.chats.get(chatID)
	c.member = &m
	s.notifyLocked()
}

// botMember is the bot's standing in c.
func (c *chatState) botMember() BotMember {
	if c.member != nil {
		return *c.member
	}
	return defaultMember(c.info.Type)
}

// postRefusal is Telegram's answer to a post in c that the bot's standing
// does not allow; nil when it may post.
func (c *chatState) postRefusal() *apiError {
	m := c.botMember()
	switch {
	case m.Status == "kicked":
		return new(blockedError(c.info.Type))
	case m.Status == "left":
		return &apiError{Code: http.StatusForbidden, Description: "Forbidden: bot is not a member of the " + c.info.Type + " chat"}
	case c.info.Type == "channel" && m.Status != "creator" && !(m.Status == "administrator" && m.CanPostMessages):
		return new(badRequest("need administrator rights in the channel chat"))
	case m.Status == "restricted" && !m.CanSendMessages:
		return new(badRequest("not enough rights to send text messages to the chat"))
	}
	return nil
}

// resolvePost is resolve for a call that posts a new message: the bot must
// also stand in the chat so as to post there.
func (b *chatBook) resolvePost(param string) (*chatState, *apiError) {
	c, aerr := b.resolve(param)
	if aerr != nil {
		return nil, aerr
	}
	if aerr := c.postRefusal(); aerr != nil {
		return nil, aerr
	}
	return c, nil
}

// chatMember is getChatMember's answer, in the Bot API's field set for each
// status (ChatMemberOwner, ChatMemberAdministrator, ChatMemberMember,
// ChatMemberRestricted, ChatMemberLeft, ChatMemberBanned), as a map so that
// each status sends its own fields and no other.
func chatMember(u User, m BotMember, chatType string) map[string]any {
	out := map[string]any{"user": u, "status": m.Status}
	switch m.Status {
	case "creator":
		out["is_anonymous"] = false
	case "administrator":
		for _, f := range []string{"can_be_edited", "is_anonymous", "can_manage_chat", "can_delete_messages", "can_manage_video_chats",
			"can_restrict_members", "can_promote_members", "can_change_info", "can_invite_users", "can_post_stories",
			"can_edit_stories", "can_delete_stories", "can_manage_voice_chats"} {
			out[f] = f == "can_manage_chat" || f == "can_delete_messages" || f == "can_invite_users"
		}
		if chatType == "channel" {
			out["can_post_messages"], out["can_edit_messages"] = m.CanPostMessages, m.CanPostMessages
		} else {
			out["can_pin_messages"] = true
		}
		if chatType == "supergroup" {
			out["can_manage_topics"] = false
		}
	case "restricted":
		out["is_member"] = true
		for _, f := range []string{"can_send_messages", "can_send_audios", "can_send_documents", "can_send_photos", "can_send_videos",
			"can_send_video_notes", "can_send_voice_notes", "can_send_polls", "can_send_other_messages", "can_add_web_page_previews"} {
			out[f] = m.CanSendMessages
		}
		out["can_change_info"], out["can_invite_users"], out["can_pin_messages"], out["until_date"] = false, false, false, 0
	case "kicked":
		out["until_date"] = 0
	}
	return out
}

// getChatMember answers for the bot itself with its standing in the chat
// (SetBotMember), and for anyone else as a member.
func (s *Server) getChatMember(_ context.Context, req *request) reply {
	s.mu.Lock()
	defer s.mu.Unlock()
	c, aerr := s.chats.resolve(req.params["chat_id"])
	if aerr != nil {
		return aerr.reply()
	}
	id, err := strconv.ParseInt(req.params["user_id"], 10, 64)
	if err != nil || id == 0 {
		return badRequest("invalid user_id specified").reply()
	}
	if id == s.bot.ID {
		return okReply(chatMember(s.bot, c.botMember(), c.info.Type))
	}
	return okReply(chatMember(User{ID: id, FirstName: "User"}, BotMember{Status: "member"}, c.info.Type))
}
