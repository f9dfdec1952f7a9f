package standin

import (
	"bytes"
	"context"
	"encoding/json"
	"regexp"
	"slices"
	"strings"
	"time"
)

// maxTextLen is the longest message text, in UTF-16 code units.
const maxTextLen = 4096

type methodFunc func(s *Server, ctx context.Context, req *request) reply

// methods maps lower-cased method names (the Bot API ignores case) to
// their handlers. Anything else answers 404 "Not Found".
var methods = map[string]methodFunc{
	"getme":                  (*Server).getMe,
	"getupdates":             (*Server).getUpdates,
	"sendmessage":            (*Server).sendMessage,
	"sendphoto":              (*Server).sendPhoto,
	"getfile":                (*Server).getFile,
	"senddocument":           (*Server).sendDocument,
	"editmessagetext":        (*Server).editMessageText,
	"editmessagereplymarkup": (*Server).editMessageReplyMarkup,
	"editmessagecaption":     (*Server).editMessageCaption,
	"sendmediagroup":         (*Server).sendMediaGroup,
	"sendpoll":               (*Server).sendPoll,
	"copymessage":            (*Server).copyMessage,
	"forwardmessage":         (*Server).forwardMessage,
	"pinchatmessage":         (*Server).pinChatMessage,
	"unpinchatmessage":       (*Server).unpinChatMessage,
	"getchat":                (*Server).getChat,
	"getchatmember":          (*Server).getChatMember,
	"deletemessage":          (*Server).deleteMessage,
	"answercallbackquery":    (*Server).answerCallbackQuery,
	"sendchataction":         (*Server).sendChatAction,
	"setmycommands":          (*Server).setMyCommands,
	"setwebhook":             (*Server).setWebhook,
	"deletewebhook":          (*Server).deleteWebhook,
}

// me is the getMe result: the bot user and its capabilities.
type me struct {
	User
	CanJoinGroups           bool `json:"can_join_groups"`
	CanReadAllGroupMessages bool `json:"can_read_all_group_messages"`
	SupportsInlineQueries   bool `json:"supports_inline_queries"`
	CanConnectToBusiness    bool `json:"can_connect_to_business"`
	HasMainWebApp           bool `json:"has_main_web_app"`
}

func (s *Server) getMe(context.Context, *request) reply {
	return okReply(me{User: s.bot, CanJoinGroups: true})
}

// content is a message's parsed text, entities and inline keyboard.
type content struct {
	raw       string
	parseMode string
	text      string
	entities  []Entity
	markup    json.RawMessage
}

// readContent parses text, parse_mode, entities and reply_markup.
func readContent(p map[string]string, withText bool) (content, *apiError) {
	c := content{raw: p["text"], parseMode: p["parse_mode"]}
	if withText {
		var aerr *apiError
		c.text, c.entities, aerr = parseText(c.raw, c.parseMode)
		if aerr != nil {
			return c, aerr
		}
		if c.parseMode == "" && p["entities"] != "" {
			if err := json.Unmarshal([]byte(p["entities"]), &c.entities); err != nil {
				return c, new(badRequest("can't parse entities JSON object"))
			}
		}
	}
	markup, aerr := parseMarkup(p["reply_markup"])
	c.markup = markup
	return c, aerr
}

// checkText applies the length rules to a parsed text.
func checkText(text string, tooLong apiError) *apiError {
	if strings.TrimSpace(text) == "" {
		return new(badRequest("message text is empty"))
	}
	if utf16Len(text) > maxTextLen {
		return &tooLong
	}
	return nil
}

func (s *Server) sendMessage(_ context.Context, req *request) reply {
	body, aerr := readContent(req.params, true)
	if aerr != nil {
		return aerr.reply()
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	c, aerr := s.chats.resolvePost(req.params["chat_id"])
	if aerr == nil {
		aerr = checkText(body.text, errMessageTooLong)
	}
	var replyTo int
	if aerr == nil {
		replyTo, aerr = replyTarget(c, req.params["reply_parameters"])
	}
	if aerr == nil {
		aerr = s.floodLocked(c.info.ID, 1)
	}
	if aerr != nil {
		return aerr.reply()
	}
	m := &Message{
		Text: body.text, Entities: body.entities, ReplyMarkup: body.markup,
		RawText: body.raw, ParseMode: body.parseMode, ReplyTo: replyTo,
		Silent: boolParam(req.params, "disable_notification"), AsksReply: forcesReply(req.params["reply_markup"]),
	}
	ref := s.postLocked(c, m)
	rep := okReply(m)
	rep.committed = []msgRef{ref}
	return rep
}

// replyTarget reads reply_parameters: the message answered must exist in the chat,
// unless allow_sending_without_reply says to send anyway (then it answers none).
func replyTarget(c *chatState, raw string) (int, *apiError) {
	if raw == "" {
		return 0, nil
	}
	var rp struct {
		MessageID                int  `json:"message_id"`
		AllowSendingWithoutReply bool `json:"allow_sending_without_reply"`
	}
	if err := json.Unmarshal([]byte(raw), &rp); err != nil {
		return 0, new(badRequest("can't parse reply parameters JSON object"))
	}
	if m := c.message(rp.MessageID); m != nil && !m.Deleted {
		return rp.MessageID, nil
	}
	if rp.AllowSendingWithoutReply {
		return 0, nil
	}
	return 0, new(badRequest("message to be replied not found"))
}

// editTargetLocked finds the bot message an edit names. Messages users
// wrote and forwarded copies cannot be edited.
func (s *Server) editTargetLocked(p map[string]string) (*Message, *apiError) {
	if p["inline_message_id"] != "" {
		return nil, new(badRequest("MESSAGE_ID_INVALID"))
	}
	c, aerr := s.chats.resolve(p["chat_id"])
	if aerr != nil {
		return nil, aerr
	}
	id, ok := intParam(p, "message_id", 0)
	if !ok || id == 0 {
		return nil, new(badRequest("message identifier is not specified"))
	}
	m := c.lookup(int(id))
	switch {
	case m == nil:
		return nil, new(badRequest("message to edit not found"))
	case m.Incoming || m.ForwardOrigin != nil:
		return nil, new(badRequest("message can't be edited"))
	}
	return m, nil
}

func (s *Server) editMessageText(_ context.Context, req *request) reply {
	body, aerr := readContent(req.params, true)
	if aerr != nil {
		return aerr.reply()
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	m, aerr := s.editTargetLocked(req.params)
	if aerr == nil && m.Text == "" {
		aerr = new(badRequest("there is no text in the message to edit"))
	}
	if aerr == nil {
		aerr = checkText(body.text, badRequest("MESSAGE_TOO_LONG"))
	}
	if aerr == nil && m.Text == body.text && slices.Equal(m.Entities, body.entities) &&
		bytes.Equal(m.ReplyMarkup, body.markup) {
		aerr = new(notModified())
	}
	if aerr != nil {
		return aerr.reply()
	}
	m.Text, m.Entities, m.RawText, m.ParseMode = body.text, body.entities, body.raw, body.parseMode
	return s.commitEditLocked(m, body.markup)
}

// editMessageCaption changes the caption of a photo or document; the same
// caption, entities and keyboard again is "message is not modified".
func (s *Server) editMessageCaption(_ context.Context, req *request) reply {
	body, aerr := readCaption(req.params)
	if aerr != nil {
		return aerr.reply()
	}
	markup, aerr := parseMarkup(req.params["reply_markup"])
	if aerr != nil {
		return aerr.reply()
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	m, aerr := s.editTargetLocked(req.params)
	if aerr == nil && m.Photo == nil && m.Document == nil {
		aerr = new(badRequest("there is no caption in the message to edit"))
	}
	if aerr == nil && m.Caption == body.text && slices.Equal(m.CaptionEntities, body.entities) &&
		bytes.Equal(m.ReplyMarkup, markup) {
		aerr = new(notModified())
	}
	if aerr != nil {
		return aerr.reply()
	}
	m.Caption, m.CaptionEntities, m.RawText, m.ParseMode = body.text, body.entities, body.raw, body.parseMode
	return s.commitEditLocked(m, markup)
}

func (s *Server) editMessageReplyMarkup(_ context.Context, req *request) reply {
	body, aerr := readContent(req.params, false)
	if aerr != nil {
		return aerr.reply()
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	m, aerr := s.editTargetLocked(req.params)
	if aerr == nil && bytes.Equal(m.ReplyMarkup, body.markup) {
		aerr = new(notModified())
	}
	if aerr != nil {
		return aerr.reply()
	}
	return s.commitEditLocked(m, body.markup)
}

// commitEditLocked stamps an accepted edit and answers with the message.
// An edit without reply_markup removes the inline keyboard, as on Telegram.
func (s *Server) commitEditLocked(m *Message, markup json.RawMessage) reply {
	m.ReplyMarkup = markup
	m.EditDate = s.now().Unix()
	m.Edits++
	s.notifyLocked()
	rep := okReply(m)
	rep.committed = []msgRef{{chatID: m.Chat.ID, messageID: m.MessageID}}
	return rep
}

// deleteWindow is how long a message can be deleted for everyone in a group.
const deleteWindow = 48 * time.Hour

// deleteMessage deletes a bot message, or a message a user wrote in a private
// chat. In groups and supergroups, where the fake gives the bot no admin
// rights, a bot message older than 48 hours can no longer be deleted for
// everyone, and other people's messages not at all; private chats have no
// such limit for the bot (it deletes its side).
func (s *Server) deleteMessage(_ context.Context, req *request) reply {
	s.mu.Lock()
	defer s.mu.Unlock()
	c, aerr := s.chats.resolve(req.params["chat_id"])
	if aerr != nil {
		return aerr.reply()
	}
	id, _ := intParam(req.params, "message_id", 0)
	m := c.lookup(int(id))
	group := c.info.Type == "group" || c.info.Type == "supergroup"
	switch {
	case m == nil:
		return badRequest("message to delete not found").reply()
	case group && m.Incoming:
		return badRequest("message can't be deleted").reply()
	case group && s.now().Sub(time.Unix(m.Date, 0)) >= deleteWindow:
		return badRequest("message can't be deleted for everyone").reply()
	}
	m.Deleted = true
	s.notifyLocked()
	return okReply(true)
}

func (s *Server) answerCallbackQuery(_ context.Context, req *request) reply {
	p := req.params
	s.mu.Lock()
	defer s.mu.Unlock()
	id := p["callback_query_id"]
	asked, ok := s.queries[id]
	now := s.now()
	if !ok || (s.queryTTL > 0 && now.Sub(asked) > s.queryTTL) {
		return badRequest("query is too old and response timeout expired or query ID is invalid").reply()
	}
	s.answers = append(s.answers, CallbackAnswer{
		QueryID: id, Text: p["text"], ShowAlert: boolParam(p, "show_alert"), URL: p["url"], Time: now,
	})
	s.notifyLocked()
	return okReply(true)
}

// chatActions are the actions sendChatAction accepts.
var chatActions = []string{"typing", "upload_photo", "record_video", "upload_video", "record_voice", "upload_voice",
	"upload_document", "choose_sticker", "find_location", "record_video_note", "upload_video_note"}

// sendChatAction accepts a known action; the call itself is the record (Calls).
func (s *Server) sendChatAction(_ context.Context, req *request) reply {
	if !slices.Contains(chatActions, req.params["action"]) {
		return badRequest("wrong parameter action in request").reply()
	}
	return okReply(true)
}

// CallbackAnswers returns the accepted answerCallbackQuery calls.
func (s *Server) CallbackAnswers() []CallbackAnswer {
	s.mu.Lock()
	defer s.mu.Unlock()
	return slices.Clone(s.answers)
}

var commandName = regexp.MustCompile(`^[a-z0-9_]{1,32}$`)

func (s *Server) setMyCommands(_ context.Context, req *request) reply {
	var cmds []BotCommand
	if err := json.Unmarshal([]byte(req.params["commands"]), &cmds); err != nil {
		return badRequest("can't parse commands JSON object").reply()
	}
	for _, c := range cmds {
		if !commandName.MatchString(c.Command) {
			return badRequest("BOT_COMMAND_INVALID").reply()
		}
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	s.commands = cmds
	s.notifyLocked()
	return okReply(true)
}

// Commands returns the command list of the last accepted setMyCommands.
func (s *Server) Commands() []BotCommand {
	s.mu.Lock()
	defer s.mu.Unlock()
	return slices.Clone(s.commands)
}

func (s *Server) setWebhook(ctx context.Context, req *request) reply {
	p := req.params
	if p["url"] == "" {
		return s.deleteWebhook(ctx, req)
	}
	if !strings.HasPrefix(strings.ToLower(p["url"]), "https://") {
		return badRequest("bad webhook: An HTTPS URL must be provided for webhook").reply()
	}
	var allowed []string
	if v := p["allowed_updates"]; v != "" {
		list, err := stringList(v)
		if err != nil {
			return badRequest("can't parse allowed updates").reply()
		}
		allowed = list
	}
	// The Bot API server clamps max_connections to 1..100, default 40.
	conns, ok := intParam(p, "max_connections", 40)
	if !ok {
		conns = 40
	}
	conns = min(max(conns, 1), 100)
	s.mu.Lock()
	defer s.mu.Unlock()
	s.webhook = Webhook{URL: p["url"], SecretToken: p["secret_token"], AllowedUpdates: allowed, MaxConnections: int(conns)}
	if cert, ok := req.files["certificate"]; ok {
		s.webhook.Certificate = cert.data
	}
	if allowed != nil {
		s.queue.allowed = allowed
	}
	s.dropPendingLocked(p)
	return okWithDescription("Webhook was set")
}

func (s *Server) deleteWebhook(_ context.Context, req *request) reply {
	s.mu.Lock()
	defer s.mu.Unlock()
	was := s.webhook.URL != ""
	s.webhook = Webhook{}
	s.dropPendingLocked(req.params)
	if !was {
		return okWithDescription("Webhook is already deleted")
	}
	return okWithDescription("Webhook was deleted")
}

func (s *Server) dropPendingLocked(p map[string]string) {
	if boolParam(p, "drop_pending_updates") {
		s.queue.pending = nil
	}
	s.notifyLocked()
}

// okWithDescription is a true result with a description, as the webhook
// methods answer.
func okWithDescription(description string) reply {
	body, _ := json.Marshal(envelope{OK: true, Result: json.RawMessage("true"), Description: description})
	return reply{status: 200, contentType: "application/json", body: body}
}

// Webhook returns the webhook set by setWebhook; URL is empty when none.
func (s *Server) Webhook() Webhook {
	s.mu.Lock()
	defer s.mu.Unlock()
	w := s.webhook
	w.AllowedUpdates = slices.Clone(w.AllowedUpdates)
	return w
}
