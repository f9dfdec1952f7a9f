// Package demo shows the card flow without a Telegram token. A person's
// private chat with the bot, and the chat the bot sends to, live on the fake
// Bot API (telegram/standin); demo draws them in a terminal (cards as text with
// numbered buttons) or on a local web page drawn like a phone, and turns what
// the person types and taps into the updates Telegram would deliver. It can
// make the next send's answer get lost, so that its outcome is unknown, and
// shows the envelope the vault keeps for it.
//
// The bot itself is the real one, wired by cmd/bot; demo only draws and
// forwards.
package demo

import (
	"errors"
	"fmt"
	"net/http"
	"regexp"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/countersign/countersign/stepup"
	"github.com/countersign/countersign/telegram/standin"
	"github.com/countersign/countersign/vault"
)

// Scene is a demo's cast: the fake Bot API the bot talks to, the person, the
// chat the bot's sends go to, and the vault that holds unknown outcomes'
// envelopes. All fields but TargetName are required. Its methods are safe for concurrent use.
type Scene struct {
	Server *standin.Server
	// You is the person's user id: operator and approver in the demo's
	// policy. Their private chat with the bot has the same id.
	You int64
	// Target is the chat the person asks the bot to send to, and
	// TargetName the name it goes by on screen ("" names it by its id).
	Target     int64
	TargetName string
	// Vault is where the bot writes the envelope of an unknown outcome.
	Vault *vault.Vault
	// TOTP is the key of the person's TOTP factor, enrolled for the demo
	// ("" for none): the demo shows the code their authenticator app would,
	// beside the bot's question for it.
	TOTP string

	review atomic.Pointer[http.Handler] // the bot's review page, once mounted

	mu   sync.Mutex
	lose *standin.Injection // the armed fault of LoseNextAnswer, nil when none
}

// Say sends text as the person in their private chat, as a reply to the bot's
// message replyTo when it is not 0 (the answer to an Edit prompt).
func (s *Scene) Say(text string, replyTo int) {
	if replyTo != 0 {
		s.Server.PushReply(s.You, s.You, replyTo, text)
		return
	}
	s.Server.PushMessage(s.You, s.You, text)
}

// Tap presses, as the person, the button carrying data under message
// messageID of chat.
func (s *Scene) Tap(chat int64, messageID int, data string) {
	s.Server.PushCallbackQuery(s.You, chat, messageID, data)
}

// LoseNextAnswer makes the next message the bot sends to the target chat
// arrive while its answer is lost (the connection drops after Telegram took
// it): the bot cannot know whether it was delivered, so its outcome is
// unknown. It reports false when a loss is armed already.
func (s *Scene) LoseNextAnswer() bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.armedLocked() {
		return false
	}
	s.lose = s.Server.Inject(standin.AcceptThenDrop().For("sendMessage").InChat(s.Target))
	return true
}

// Armed reports whether LoseNextAnswer's loss waits for a send.
func (s *Scene) Armed() bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.armedLocked()
}

func (s *Scene) armedLocked() bool { return s.lose != nil && s.lose.Fired() == 0 }

// View is what the person sees at one moment: both chats, the envelopes of
// the operations they mention, and the short answers to taps.
type View struct {
	Chats     []Chat     `json:"chats"`
	Envelopes []Envelope `json:"envelopes"`
	// Answers are the texts the bot answered taps with (Telegram shows
	// them for a moment over the chat), oldest first.
	Answers []string `json:"answers"`
	// Armed is set while LoseNextAnswer's loss waits for a send.
	Armed bool `json:"armed"`
	// Authenticator is what the person's authenticator app shows now, when
	// the demo enrolled one (Scene.TOTP).
	Authenticator *Authenticator `json:"authenticator,omitempty"`
}

// Authenticator is the code an authenticator app shows, and for how many
// seconds more.
type Authenticator struct {
	Code string `json:"code"`
	Left int    `json:"left"`
}

// Code is what the person's authenticator app shows now, and for how many
// seconds more; ok is false when the demo enrolled none.
func (s *Scene) Code() (a Authenticator, ok bool) {
	if s.TOTP == "" {
		return a, false
	}
	now := time.Now()
	code, err := stepup.Code(s.TOTP, now)
	if err != nil {
		return a, false
	}
	period := int64(stepup.Period / time.Second)
	return Authenticator{Code: code, Left: int(period - now.Unix()%period)}, true
}

// Chat is one chat of a View.
type Chat struct {
	ID       int64    `json:"id"`
	Title    string   `json:"title"`
	Messages []Bubble `json:"messages"`
}

// Bubble is one message as a phone draws it. Deleted messages are left out.
type Bubble struct {
	ID int `json:"id"`
	// Mine is set on what the person wrote; the rest is the bot's.
	Mine bool   `json:"mine"`
	Text string `json:"text"`
	// Media names what the message carries besides text: "photo",
	// "document" or "poll"; its caption is Text.
	Media   string     `json:"media,omitempty"`
	Edited  bool       `json:"edited,omitempty"`
	ReplyTo int        `json:"reply_to,omitempty"`
	Buttons [][]Button `json:"buttons,omitempty"`
	// AsksReply is set on a message that asks for a reply to it
	// (force_reply): the bot's prompt for an edited text.
	AsksReply bool `json:"asks_reply,omitempty"`
	// Lost is set on a message Telegram took whose answer never reached
	// the bot (LoseNextAnswer): it arrived, and the bot cannot know it.
	Lost bool `json:"lost,omitempty"`
}

// Button is an inline keyboard button: a callback (Data) or a link (URL).
type Button struct {
	Text string `json:"text"`
	Data string `json:"data,omitempty"`
	URL  string `json:"url,omitempty"`
}

// Envelope is an unknown outcome's note in the vault, as it is on disk.
type Envelope struct {
	Operation string `json:"operation"`
	Path      string `json:"path"`
	Markdown  string `json:"markdown"`
}

// View returns what the person sees now. It returns an error only when the
// vault cannot be read.
func (s *Scene) View() (View, error) {
	v := View{Armed: s.Armed(), Answers: []string{}, Envelopes: []Envelope{}}
	var ops []string
	for _, id := range []int64{s.You, s.Target} {
		c := Chat{ID: id, Title: s.title(id), Messages: []Bubble{}}
		for _, m := range s.Server.Conversation(id) {
			if m.Deleted {
				continue
			}
			b := bubble(m)
			c.Messages = append(c.Messages, b)
			ops = append(ops, operations(b)...)
		}
		v.Chats = append(v.Chats, c)
	}
	for _, a := range s.Server.CallbackAnswers() {
		if a.Text != "" {
			v.Answers = append(v.Answers, a.Text)
		}
	}
	slices.Sort(ops)
	for _, op := range slices.Compact(ops) {
		_, path, text, err := s.Vault.GetText(op)
		switch {
		case errors.Is(err, vault.ErrNotFound):
			continue // an operation whose outcome is known has no envelope
		case err != nil:
			return View{}, fmt.Errorf("demo: envelope of %s: %w", op, err)
		}
		v.Envelopes = append(v.Envelopes, Envelope{Operation: op, Path: path, Markdown: string(text)})
	}
	if you := v.Chats[0].Messages; len(you) > 0 && AsksCode(you[len(you)-1]) {
		if a, ok := s.Code(); ok {
			v.Authenticator = &a // only while the bot waits for a code: it changes every second
		}
	}
	return v, nil
}

// AsksCode reports whether b is the bot's question for a second factor's
// code (the prompt a tap on Approve of a step-up approval brings).
func AsksCode(b Bubble) bool { return !b.Mine && b.AsksReply && strings.HasPrefix(b.Text, "🔐") }

// title names a chat as the person's phone does.
func (s *Scene) title(id int64) string {
	switch {
	case id == s.You:
		return s.Server.Bot().FirstName
	case s.TargetName != "":
		return fmt.Sprintf("%s (%d)", s.TargetName, id)
	}
	return fmt.Sprintf("chat %d", id)
}

var opID = regexp.MustCompile(`\bop-[a-z0-9]+\b`)

// operations are the operation ids a bubble names, in its text or buttons.
func operations(b Bubble) []string {
	ids := opID.FindAllString(b.Text, -1)
	for _, row := range b.Buttons {
		for _, btn := range row {
			ids = append(ids, opID.FindAllString(btn.Data, -1)...)
		}
	}
	return ids
}
