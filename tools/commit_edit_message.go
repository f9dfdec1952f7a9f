package tools

import (
	"context"
	_ "embed"
	"encoding/json"
	"errors"

	"github.com/countersign/countersign/action"
	"github.com/countersign/countersign/policy"
	"github.com/countersign/countersign/verifier"
)

//go:embed commit_edit_message.md
var editMessageDoc string

// Edit is one edit of a message's text: the message, and what it will read.
type Edit struct {
	Target    string
	MessageID int64
	Text      string
	ParseMode string
	// Caption edits a file's caption (editMessageCaption) rather than a text.
	Caption bool
}

// Editor changes the text of a message this bot sent (Telegram's
// editMessageText). Its errors are a Sender's, and ErrAlreadyDone when the
// message already reads so.
type Editor interface {
	Edit(ctx context.Context, e Edit) (Delivery, error)
}

// EditMessage edits a message this bot sent. It is state-setting: the same edit
// again sets the same text, so the operator settles an unknown outcome by
// repeating it (policy.StateSetting). The card shows the text before and after.
type EditMessage struct{ Editor Editor }

var (
	_ Classed = EditMessage{}
	_ Reader  = EditMessage{}
)

// Name implements Tool.
func (EditMessage) Name() string { return "commit_edit_message" }

// Description implements Tool.
func (EditMessage) Description() string { return editMessageDoc }

// Params implements Tool.
func (EditMessage) Params() Params {
	return committing(Params{Properties: map[string]any{
		"operation_id": map[string]any{"type": "string", "description": "the operation that sent the message (op-…); or give chat_id and message_id"},
		"chat_id":      map[string]any{"type": "string", "description": "the chat the message is in, as it was sent to"},
		"message_id":   map[string]any{"type": "integer", "description": "the message's id in that chat"},
		"text":         map[string]any{"type": "string", "description": "the exact new text; it replaces the message's text as given"},
		"parse_mode":   map[string]any{"type": "string", "enum": []string{"HTML", "MarkdownV2"}, "description": "omit for plain text"},
	}, Required: []string{"text"}})
}

// Idempotency implements Classed.
func (EditMessage) Idempotency() policy.Idempotency { return policy.StateSetting }

// errNeedsSent is Prepare's answer: an edit is prepared from what was sent.
var errNeedsSent = errors.New("tools: commit_edit_message is prepared from what was sent (PrepareFrom)")

// Prepare implements Tool; the operator calls PrepareFrom instead.
func (EditMessage) Prepare(json.RawMessage) (action.Payload, error) {
	return action.Payload{}, errNeedsSent
}

const editShape = `{"operation_id": "op-…", "text": "..."} or {"chat_id": "222", "message_id": 101, "text": "..."}`

// PrepareFrom implements Reader. The message must be one the journal shows this
// bot sent, named once (by operation, or by chat and message id), and the new
// text must differ from what it reads now; the payload holds both.
func (t EditMessage) PrepareFrom(ctx context.Context, raw json.RawMessage, sent Sent) (action.Payload, error) {
	in, err := readArgs(t.Name(), raw, editShape)
	if err != nil {
		return action.Payload{}, err
	}
	text, err := in.string("text", true)
	if err != nil {
		return action.Payload{}, err
	}
	mode, err := in.parseMode()
	if err != nil {
		return action.Payload{}, err
	}
	if err := in.checkText(text); err != nil {
		return action.Payload{}, err
	}
	m, err := sentMessage(ctx, in, sent, "edited")
	if err != nil {
		return action.Payload{}, err
	}
	if m.Kind == KindPoll || m.Kind == KindRepost {
		return action.Payload{}, in.refuse("message %d in chat %s is a %s: its text cannot be edited", m.MessageID, m.Chat, m.Kind)
	}
	if m.Text == text && m.ParseMode == mode {
		return action.Payload{}, in.refuse("message %d in chat %s already reads so: nothing to change", m.MessageID, m.Chat)
	}
	p := action.Payload{Action: action.EditMessage, Target: m.Chat, MessageID: m.MessageID, Text: text, ParseMode: mode, Before: m.Text, Caption: m.Kind == action.FilePhoto || m.Kind == action.FileDocument}
	if err := editText(in, text, mode, p); err != nil {
		return action.Payload{}, err
	}
	return p, nil
}

// editText checks the new text of p, an edit, as Telegram takes it: no secret,
// one message, and a file's caption at most 1024 characters. PrepareFrom and
// Revise both check with it, so that an approver's correction is held to every
// limit the request was.
func editText(in args, text, mode string, p action.Payload) error {
	if err := in.checkText(text); err != nil {
		return err
	}
	switch n := verifier.Length(text, mode); {
	case p.Caption && n > 1024:
		return in.refuse("message %d in chat %s holds a file: its caption is at most 1024 characters, got %d", p.MessageID, p.Target, n)
	case n > MaxMessageUnits:
		return in.refuse("an edit is one message: at most %d characters, got %d", MaxMessageUnits, n)
	}
	return nil
}

// Show implements Presenter: the message, what it reads now, and the new text.
func (EditMessage) Show(p action.Payload) Shown {
	if p.Caption {
		return Shown{Facts: []string{change(p, "Changes the caption of")}, TextLabel: "The caption will read"}
	}
	return Shown{Facts: []string{change(p, "Changes")}, TextLabel: "It will read"}
}

// Commit implements Committer. A message that already reads so (ErrAlreadyDone,
// with the evidence) is the edit landed, by this call or an earlier one.
func (t EditMessage) Commit(ctx context.Context, p action.Payload) (action.Evidence, error) {
	ev := action.Evidence{ChatID: p.Target, MessageIDs: []int64{p.MessageID}}
	d, err := t.Editor.Edit(ctx, Edit{Target: p.Target, MessageID: p.MessageID, Text: p.Text, ParseMode: p.ParseMode, Caption: p.Caption})
	if err != nil && !errors.Is(err, ErrAlreadyDone) {
		return action.Evidence{}, err
	}
	if d.ChatID != "" {
		ev.ChatID = d.ChatID
	}
	return ev, err
}
