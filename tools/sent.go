package tools

import (
	"context"
	"errors"
	"fmt"

	"github.com/countersign/countersign/policy"
)

// messageParams are the arguments that name a message this bot sent.
func messageParams() Params {
	return committing(Params{Properties: map[string]any{
		"operation_id": map[string]any{"type": "string", "description": "the operation that sent the message (op-…); or give chat_id and message_id"},
		"chat_id":      map[string]any{"type": "string", "description": "the chat the message is in, as it was sent to"},
		"message_id":   map[string]any{"type": "integer", "description": "the message's id in that chat"},
	}})
}

// messageShape is what arguments that name a message look like, for a refusal.
const messageShape = `{"operation_id": "op-…"} or {"chat_id": "222", "message_id": 101}`

// sentMessage finds the message a call of a tool that acts on what was sent (an
// edit, a delete) names, by operation or by chat and message id, as it reads
// now. It refuses a message the journal does not show this bot sent, one sent
// in several parts named by its operation, and one deleted since; verb says
// what the tool does, for the refusals.
func sentMessage(ctx context.Context, in args, sent Sent, verb string) (SentMessage, error) {
	opID, err := in.string("operation_id", false)
	if err != nil {
		return SentMessage{}, err
	}
	id, err := in.messageID("message_id")
	if err != nil {
		return SentMessage{}, err
	}
	var chat string
	if in.value("chat_id") != nil {
		if chat, err = in.chatID(); err != nil {
			return SentMessage{}, err
		}
		if chat, err = policy.NormalizeTarget(chat); err != nil {
			return SentMessage{}, in.refuse("chat_id %s is not a chat id or @username", in.value("chat_id"))
		}
	}
	switch {
	case opID != "" && (chat != "" || id != 0):
		return SentMessage{}, in.refuse("name the message once: operation_id, or chat_id and message_id, not both")
	case opID != "":
		ms, err := sent.Operation(ctx, opID)
		if err != nil {
			return SentMessage{}, notSent(in, err, "operation "+opID, verb)
		}
		if len(ms) != 1 {
			return SentMessage{}, in.refuse("operation %s sent %d messages: name each by chat_id and message_id", opID, len(ms))
		}
		chat, id = ms[0].Chat, ms[0].MessageID
	case chat == "" || id == 0:
		return SentMessage{}, in.refuse("name the message: operation_id, or chat_id and message_id")
	}
	m, err := sent.Message(ctx, chat, id)
	if err != nil {
		return SentMessage{}, notSent(in, err, fmt.Sprintf("message %d in chat %s", id, chat), verb)
	}
	if m.Deleted {
		return SentMessage{}, in.refuse("message %d in chat %s was deleted (%s)", id, chat, m.OperationID)
	}
	return m, nil
}

// notSent is the refusal of a message the journal does not show this bot sent,
// or the error that kept it from telling.
func notSent(in args, err error, what, verb string) error {
	if errors.Is(err, ErrNotSentHere) {
		return in.refuse("%s: no message this bot sent (only its own messages can be %s, once their sending is committed)", what, verb)
	}
	return fmt.Errorf("tools: look up %s: %w", what, err)
}
