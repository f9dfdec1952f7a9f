package standin

import (
	"bytes"
	"encoding/json"
	"maps"
	"slices"
	"time"
)

// User is a Telegram user or bot, shaped as on the wire.
type User struct {
	ID           int64  `json:"id"`
	IsBot        bool   `json:"is_bot"`
	FirstName    string `json:"first_name"`
	LastName     string `json:"last_name,omitempty"`
	Username     string `json:"username,omitempty"`
	LanguageCode string `json:"language_code,omitempty"`
}

// Chat is a Telegram chat, shaped as on the wire. Type is "private",
// "group", "supergroup" or "channel".
type Chat struct {
	ID        int64  `json:"id"`
	Type      string `json:"type"`
	Title     string `json:"title,omitempty"`
	Username  string `json:"username,omitempty"`
	FirstName string `json:"first_name,omitempty"`
	LastName  string `json:"last_name,omitempty"`
}

// Entity is a MessageEntity. Offset and Length count UTF-16 code units.
type Entity struct {
	Type          string `json:"type"`
	Offset        int    `json:"offset"`
	Length        int    `json:"length"`
	URL           string `json:"url,omitempty"`
	Language      string `json:"language,omitempty"`
	CustomEmojiID string `json:"custom_emoji_id,omitempty"`
}

// Message is a message the server knows: one the bot sent, or one a user
// wrote (PushMessage). The tagged fields are what the Bot API answers with;
// the others describe what happened to it and never go on the wire.
type Message struct {
	MessageID       int             `json:"message_id"`
	From            *User           `json:"from,omitempty"`
	Chat            Chat            `json:"chat"`
	Date            int64           `json:"date"`
	EditDate        int64           `json:"edit_date,omitempty"`
	ForwardOrigin   *Origin         `json:"forward_origin,omitempty"`
	MediaGroupID    string          `json:"media_group_id,omitempty"`
	Text            string          `json:"text,omitempty"`
	Entities        []Entity        `json:"entities,omitempty"`
	Photo           []PhotoSize     `json:"photo,omitempty"`
	Document        *Document       `json:"document,omitempty"`
	Caption         string          `json:"caption,omitempty"`
	CaptionEntities []Entity        `json:"caption_entities,omitempty"`
	Poll            *Poll           `json:"poll,omitempty"`
	ReplyMarkup     json.RawMessage `json:"reply_markup,omitempty"`

	// RawText is the text (or, for media, the caption) parameter as sent,
	// before entity parsing.
	RawText string `json:"-"`
	// ReplyTo is the id of the message this one answers (reply_parameters), 0
	// when none.
	ReplyTo int `json:"-"`
	// ParseMode is the parse_mode of the last accepted send or edit.
	ParseMode string `json:"-"`
	// Edits counts accepted edits (text, caption, reply markup).
	Edits int `json:"-"`
	// Deleted is set once deleteMessage removed the message.
	Deleted bool `json:"-"`
	// ReplyLost is set when the message was committed but the call that
	// created it got no response (a drop or hang fault).
	ReplyLost bool `json:"-"`
	// Silent is the disable_notification of the send.
	Silent bool `json:"-"`
	// Incoming is set on messages users wrote (PushMessage): the bot may
	// copy and forward them, not edit them.
	Incoming bool `json:"-"`
	// AsksReply is set when the send's reply_markup was a ForceReply: the
	// user's app opens a reply to the message. Telegram does not echo that
	// markup, so ReplyMarkup never shows it.
	AsksReply bool `json:"-"`
}

func (m Message) clone() Message {
	m.Entities = slices.Clone(m.Entities)
	m.CaptionEntities = slices.Clone(m.CaptionEntities)
	m.Photo = slices.Clone(m.Photo)
	m.ReplyMarkup = bytes.Clone(m.ReplyMarkup)
	if m.From != nil {
		from := *m.From
		m.From = &from
	}
	if m.Document != nil {
		d := *m.Document
		m.Document = &d
	}
	if m.Poll != nil {
		p := *m.Poll
		p.Options = slices.Clone(p.Options)
		m.Poll = &p
	}
	if m.ForwardOrigin != nil {
		o := m.ForwardOrigin.clone()
		m.ForwardOrigin = &o
	}
	return m
}

// PhotoSize is one size of a sent photo. FileUniqueID follows the content:
// the same bytes give the same ids.
type PhotoSize struct {
	FileID       string `json:"file_id"`
	FileUniqueID string `json:"file_unique_id"`
	FileSize     int    `json:"file_size,omitempty"`
	Width        int    `json:"width"`
	Height       int    `json:"height"`
}

// Document is a sent general file.
type Document struct {
	FileID       string `json:"file_id"`
	FileUniqueID string `json:"file_unique_id"`
	FileName     string `json:"file_name,omitempty"`
	MimeType     string `json:"mime_type,omitempty"`
	FileSize     int    `json:"file_size,omitempty"`
}

// Poll is a sent poll; nobody votes in the fake, so counts stay 0.
type Poll struct {
	ID                    string       `json:"id"`
	Question              string       `json:"question"`
	QuestionEntities      []Entity     `json:"question_entities,omitempty"`
	Options               []PollOption `json:"options"`
	TotalVoterCount       int          `json:"total_voter_count"`
	IsClosed              bool         `json:"is_closed"`
	IsAnonymous           bool         `json:"is_anonymous"`
	Type                  string       `json:"type"`
	AllowsMultipleAnswers bool         `json:"allows_multiple_answers"`
	CorrectOptionID       *int         `json:"correct_option_id,omitempty"`
}

// PollOption is one answer of a Poll.
type PollOption struct {
	Text       string `json:"text"`
	VoterCount int    `json:"voter_count"`
}

// Origin is a forwarded message's forward_origin: Type "user" (SenderUser
// set) or "channel" (Chat and MessageID set).
type Origin struct {
	Type       string `json:"type"`
	Date       int64  `json:"date"`
	SenderUser *User  `json:"sender_user,omitempty"`
	Chat       *Chat  `json:"chat,omitempty"`
	MessageID  int    `json:"message_id,omitempty"`
}

func (o Origin) clone() Origin {
	if o.SenderUser != nil {
		u := *o.SenderUser
		o.SenderUser = &u
	}
	if o.Chat != nil {
		c := *o.Chat
		o.Chat = &c
	}
	return o
}

// Call is one request the server received, in arrival order.
type Call struct {
	// Seq numbers calls from 1 in arrival order.
	Seq int
	// Method is the method name as it appeared in the URL path.
	Method string
	// Client is the name a client called under (see ClientURL), "" when it
	// called URL itself.
	Client string
	// Params holds the request fields: strings raw, other values as JSON
	// text (chat_id=777, reply_markup={...}), as go-telegram/bot sends them.
	Params map[string]string
	// Uploads describes the multipart file parts, by field name (the
	// attach:// name of a media group item); nil when there were none. The
	// bytes themselves are not kept.
	Uploads map[string]Upload
	// ChatID is the chat the call addressed, 0 when there is none.
	ChatID int64
	// Time is when the call arrived, by the server clock.
	Time time.Time
	// Done is set once the server finished with the call.
	Done bool
	// Status is the HTTP status written; 0 while the call is in flight or
	// when no response was written (dropped connection, client gone).
	Status int
	// Description is the error description sent, empty on success.
	Description string
	// Fault is the action of the injected fault applied to the call,
	// ActionNone if none was.
	Fault Action
	// Delay is the injected delay applied before answering.
	Delay time.Duration
}

func (c Call) clone() Call {
	c.Params = maps.Clone(c.Params)
	c.Uploads = maps.Clone(c.Uploads)
	return c
}

// Upload is a file part of a call: the file name the client gave, the size
// in bytes and the hex SHA-256 of the content.
type Upload struct {
	FileName string
	Size     int
	SHA256   string
}

// BotCommand is one entry of a setMyCommands call.
type BotCommand struct {
	Command     string `json:"command"`
	Description string `json:"description"`
}

// CallbackAnswer is one accepted answerCallbackQuery call.
type CallbackAnswer struct {
	QueryID   string
	Text      string
	ShowAlert bool
	URL       string
	Time      time.Time
}

// Webhook is the webhook configuration set by setWebhook.
type Webhook struct {
	URL            string
	SecretToken    string
	AllowedUpdates []string
	// MaxConnections is the max_connections given, 40 (Telegram's default)
	// when none was.
	MaxConnections int
	// Certificate is the public key certificate uploaded with setWebhook (for a
	// self-signed one), nil when none was.
	Certificate []byte
}
