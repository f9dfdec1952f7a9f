package tools

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"

	"github.com/countersign/countersign/action"
	"github.com/countersign/countersign/policy"
	"github.com/countersign/countersign/verifier"
)

// Reposter forwards a message to another chat, or posts a copy of it with no
// link to the original (Telegram's forwardMessage and copyMessage). Its errors
// are a Sender's.
type Reposter interface {
	Repost(ctx context.Context, target, from string, messageID int64, copy bool) (Delivery, error)
}

// repost is a tool that puts a message already in a chat into another: a
// forward or a copy (commit_forward_message.go, commit_copy_message.go). It is
// additive: each call adds a message.
type repost struct {
	name, doc, action, verb string
	copy                    bool
	reposter                Reposter
}

var (
	_ Reader    = repost{}
	_ Presenter = repost{}
	_ Checked   = repost{}
	_ Classed   = repost{}
)

func (t repost) Name() string        { return t.name }
func (t repost) Description() string { return t.doc }

func (t repost) Params() Params {
	return committing(Params{Properties: map[string]any{
		"chat_id":      map[string]any{"type": "string", "description": "the chat id or @username to " + t.verb + " to"},
		"operation_id": map[string]any{"type": "string", "description": "the operation that sent the message (op-…); or give from_chat_id and message_id"},
		"from_chat_id": map[string]any{"type": "string", "description": "the chat the message is in"},
		"message_id":   map[string]any{"type": "integer", "description": "the message's id in that chat"},
	}, Required: []string{"chat_id"}})
}

func (t repost) Idempotency() policy.Idempotency { return policy.Additive }

// Reposts reports whether t puts a message from another chat into its target
// (a forward or a copy): what it sends is that message, which a window grant,
// made for a tool and a target, never saw.
func Reposts(t Tool) bool {
	_, ok := t.(repost)
	return ok
}

func (t repost) Prepare(json.RawMessage) (action.Payload, error) {
	return action.Payload{}, errNeedsSent
}

const repostShape = `{"chat_id": "@channel", "operation_id": "op-…"} or {"chat_id": "@channel", "from_chat_id": "222", "message_id": 101}`

// PrepareFrom implements Reader: the message is named by the operation that
// sent it, or by its chat and id. A message this bot sent is quoted on the
// card; another (one a person wrote) cannot be read back, and the card says so.
func (t repost) PrepareFrom(ctx context.Context, raw json.RawMessage, sent Sent) (action.Payload, error) {
	in, err := readArgs(t.name, raw, repostShape)
	if err != nil {
		return action.Payload{}, err
	}
	target, err := in.target()
	if err != nil {
		return action.Payload{}, err
	}
	p := action.Payload{Action: t.action, Target: target}
	if in.value("operation_id") != nil {
		named := in
		named.fields = map[string]json.RawMessage{"operation_id": in.fields["operation_id"]}
		m, err := sentMessage(ctx, named, sent, t.verb+"ed")
		if err != nil {
			return action.Payload{}, err
		}
		p.From, p.MessageID, p.Before = m.Chat, m.MessageID, m.Text
		return p, nil
	}
	if in.value("from_chat_id") == nil {
		return action.Payload{}, in.refuse("name the message: operation_id, or from_chat_id and message_id")
	}
	from := in
	from.fields = map[string]json.RawMessage{"chat_id": in.fields["from_chat_id"]}
	if p.From, err = from.target(); err != nil {
		return action.Payload{}, in.refuse("from_chat_id %s is not a chat id or @username", in.value("from_chat_id"))
	}
	if p.MessageID, err = in.messageID("message_id"); err != nil || p.MessageID == 0 {
		return action.Payload{}, in.refuse("message_id: name the message to %s", t.verb)
	}
	// A message this bot sent is quoted; one a person wrote cannot be read.
	switch m, err := sent.Message(ctx, p.From, p.MessageID); {
	case err == nil && m.Deleted:
		return action.Payload{}, in.refuse("message %d in chat %s was deleted (%s)", p.MessageID, p.From, m.OperationID)
	case err == nil:
		p.Before = m.Text
	case !errors.Is(err, ErrNotSentHere):
		return action.Payload{}, fmt.Errorf("tools: look up message %d in chat %s: %w", p.MessageID, p.From, err)
	}
	return p, nil
}

// Show implements Presenter: the message taken, quoted when the bot sent it.
func (t repost) Show(p action.Payload) Shown {
	verb := "Forwards (with its author shown)"
	if t.copy {
		verb = "Copies (with no link to the original)"
	}
	fact := fmt.Sprintf("%s message %d of chat %s to %s.", verb, p.MessageID, p.From, p.Target)
	s := Shown{Facts: []string{fact}}
	if p.Before == "" {
		s.Omitted = "what the message says: the bot did not send it, and Telegram lets a bot read only what it sent"
		return s
	}
	s.Facts = append(s.Facts, "It reads:\n"+p.Before)
	return s
}

// Check implements Checked: the audience, and the message's text when known,
// checked as any text to the target (links, house rules).
func (t repost) Check(p action.Payload) verifier.Input {
	return verifier.Input{Action: p.Action, Target: p.Target, Text: p.Before, NoText: p.Before == ""}
}

// Commit implements Committer.
func (t repost) Commit(ctx context.Context, p action.Payload) (action.Evidence, error) {
	d, err := t.reposter.Repost(ctx, p.Target, p.From, p.MessageID, t.copy)
	if err != nil {
		return action.Evidence{}, err
	}
	return action.Evidence{ChatID: d.ChatID, MessageIDs: []int64{d.MessageID}}, nil
}
