// Package tools holds the tools and the registry that offers them: each tool
// turns a call's arguments into a payload (package action) and a payload into
// the world's change. The system fills the result from what really happened;
// the words of a model never set it.
package tools

import (
	"context"
	"encoding/json"
	"strings"

	"github.com/countersign/countersign/action"
	"github.com/countersign/countersign/policy"
	"github.com/countersign/countersign/secret"
	"github.com/countersign/countersign/verifier"
)

// Tool is one tool as offered to a caller. Prepare has no side effect: it turns the
// call's arguments into the exact payload, or returns an *ArgsError.
type Tool interface {
	Name() string
	Description() string
	// Params describes the arguments Prepare takes, for a model that calls the tool.
	Params() Params
	Prepare(args json.RawMessage) (action.Payload, error)
}

// Params is a tool's argument object in JSON Schema terms: each property's schema
// and the names that are required.
type Params struct {
	Properties map[string]any
	Required   []string
}

// sendParams are the arguments of the message tools (SendArgs).
func sendParams(what string) Params {
	return committing(Params{Properties: map[string]any{
		"chat_id":    map[string]any{"type": "string", "description": "the chat id (\"-1001234567890\") or @username to " + what},
		"text":       map[string]any{"type": "string", "description": "the exact text; it is delivered as given, nothing added"},
		"parse_mode": map[string]any{"type": "string", "enum": []string{"HTML", "MarkdownV2"}, "description": "omit for plain text"},
	}, Required: []string{"chat_id", "text"}})
}

// Committer is a tool that changes the world. Commit delivers exactly the payload
// and reports the evidence, or an error a Sender defined (see errors.go).
type Committer interface {
	Tool
	Commit(ctx context.Context, p action.Payload) (action.Evidence, error)
}

// Message is one message to deliver.
type Message struct {
	Target    string
	Text      string
	ParseMode string
}

// Delivery is what the service confirmed.
type Delivery struct {
	ChatID    string
	MessageID int64
}

// Sender delivers a message to a chat: the console prints it, Telegram sends it.
// Its errors say what happened to the request (ErrNotSent, ErrOutcomeUnknown,
// *RetryAfterError, *RepairError, *RefusedError). The operator does not cancel a
// send in flight, so Send must bound its own time.
type Sender interface {
	Send(ctx context.Context, m Message) (Delivery, error)
}

// SendArgs are the arguments of the message tools.
type SendArgs struct {
	ChatID    string `json:"chat_id"`
	Text      string `json:"text"`
	ParseMode string `json:"parse_mode,omitempty"`
}

// sendShape is what a message tool's arguments look like, for a refusal.
const sendShape = `{"chat_id": "222", "text": "..."}`

// decodeSendArgs reads and checks the arguments of a message tool, as models write
// them (see args): chat_id as a string or a whole number, parse_mode null or left
// out, keys the tool does not take ignored. The chat id comes back normalised
// (policy.NormalizeTarget), so that the payload names each chat one way: the hash,
// the card, the journal and the verifier's checks all see that form.
func decodeSendArgs(tool string, raw json.RawMessage) (SendArgs, error) {
	var a SendArgs
	in, err := readArgs(tool, raw, sendShape)
	if err != nil {
		return a, err
	}
	if a.ChatID, err = in.chatID(); err != nil {
		return a, err
	}
	if a.Text, err = in.string("text", true); err != nil {
		return a, err
	}
	if a.ParseMode, err = in.parseMode(); err != nil {
		return a, err
	}
	target, err := policy.NormalizeTarget(a.ChatID)
	if err != nil {
		return a, in.refuse("chat_id %s is not a chat id or @username", in.value("chat_id"))
	}
	if err := in.checkText(a.Text); err != nil {
		return a, err
	}
	if a.ParseMode != "" && verifier.Length(a.Text, a.ParseMode) > MaxMessageUnits {
		// Splitting could cut an entity in two; plain text splits safely. The
		// limit is on the text after its markup is parsed, as Telegram counts.
		return a, in.refuse("a text longer than %d characters is sent as plain text: drop parse_mode or shorten it (it is %d)", MaxMessageUnits, verifier.Length(a.Text, a.ParseMode))
	}
	a.ChatID = target
	return a, nil
}

// parseMode reads parse_mode: "HTML", "MarkdownV2", or left out for plain text.
func (in args) parseMode() (string, error) {
	m, err := in.string("parse_mode", false)
	switch {
	case err != nil:
		return "", in.refuse(`parse_mode: want "HTML", "MarkdownV2" or null for plain text, got %s`, kindOf(in.value("parse_mode")))
	case m != "" && m != "HTML" && m != "MarkdownV2":
		return "", in.refuse("parse_mode %q is not HTML or MarkdownV2", m)
	}
	return m, nil
}

// checkText refuses a message text that must not leave: empty, or holding what
// looks like a secret.
func (in args) checkText(text string) error {
	switch {
	case strings.TrimSpace(text) == "":
		return in.refuse("text is empty")
	case secret.Contains(text):
		return in.refuse("the text contains what looks like a secret (a bot token or an API key); it is neither sent nor stored")
	}
	return nil
}

// deliver sends a payload through a sender and turns the confirmation into evidence.
func deliver(ctx context.Context, s Sender, p action.Payload) (action.Evidence, error) {
	d, err := s.Send(ctx, Message{Target: p.Target, Text: p.Text, ParseMode: p.ParseMode})
	if err != nil {
		return action.Evidence{}, err
	}
	return action.Evidence{ChatID: d.ChatID, MessageIDs: []int64{d.MessageID}}, nil
}

// newPayload builds a message payload, split into parts when the text is longer
// than one Telegram message. A text with a parse mode is one message: it is within
// the limit after its markup is parsed (decodeSendArgs), and its markup may make
// its source longer.
func newPayload(kind string, a SendArgs) action.Payload {
	p := action.Payload{Action: kind, Target: a.ChatID, Text: a.Text, ParseMode: a.ParseMode}
	if parts := Split(a.Text, MaxMessageUnits); len(parts) > 1 && a.ParseMode == "" {
		p.Parts = parts
	}
	return p
}
