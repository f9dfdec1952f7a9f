package tools

import (
	"encoding/json"
	"errors"

	"github.com/countersign/countersign/action"
)

// ErrNotRevisable refuses an edit before approval of a payload that has no text
// an approver could correct (a delete, a pin, a forward, an HTTP call), or of
// a tool the policy in force no longer offers.
var ErrNotRevisable = errors.New("this action has no text to correct before approval")

// Reviser is a tool whose payload's text an approver may correct from the
// approval card before approving it (an edit before approve): Revise returns p
// with text in place of its text (a message, a caption, the new text of an
// edit), everything else as it was, and what the text decides derived again (a
// long message's parts). The operator verifies the result like any payload,
// and binds a new approval to its hash.
type Reviser interface {
	Revise(p action.Payload, text string) (action.Payload, error)
}

// Revise is p, a payload of t, with text as its text: ErrNotRevisable when t
// cannot say how.
func Revise(t Tool, p action.Payload, text string) (action.Payload, error) {
	r, ok := t.(Reviser)
	if !ok || t == nil {
		return action.Payload{}, ErrNotRevisable
	}
	return r.Revise(p, text)
}

// A revision is checked as the tool's prepare checks its arguments, by the same
// readers: a revised text passes every check a prepared one does (a secret, a
// parse mode's one-message limit, an edit's or a caption's limit), so that an
// approval is never spent on a payload Telegram refuses at commit.

// reviseText is a message's payload with its text replaced, read again as the
// tool's arguments would be and split anew.
func reviseText(tool string, p action.Payload, text string) (action.Payload, error) {
	raw, err := json.Marshal(SendArgs{ChatID: p.Target, Text: text, ParseMode: p.ParseMode})
	if err != nil {
		return action.Payload{}, err
	}
	a, err := decodeSendArgs(tool, raw)
	if err != nil {
		return action.Payload{}, err
	}
	return newPayload(p.Action, a), nil
}

// Revise implements Reviser.
func (t SendMessage) Revise(p action.Payload, text string) (action.Payload, error) {
	return reviseText(t.Name(), p, text)
}

// Revise implements Reviser.
func (t PublishPost) Revise(p action.Payload, text string) (action.Payload, error) {
	return reviseText(t.Name(), p, text)
}

// Revise implements Reviser: the new text (or caption) the edit sets, checked
// as PrepareFrom checks it.
func (t EditMessage) Revise(p action.Payload, text string) (action.Payload, error) {
	if err := editText(args{tool: t.Name()}, text, p.ParseMode, p); err != nil {
		return action.Payload{}, err
	}
	p.Text = text
	return p, nil
}

// Revise implements Reviser: the file's caption, checked as Prepare checks it.
func (t sendFile) Revise(p action.Payload, text string) (action.Payload, error) {
	if err := (args{tool: t.Name()}).checkText(text); err != nil {
		return action.Payload{}, err
	}
	p.Text = text
	return p, nil
}
