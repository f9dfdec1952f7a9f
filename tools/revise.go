package tools

import "errors"

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
	Revise(p Payload, text string) (Payload, error)
}

// Revise is p, a payload of t, with text as its text: ErrNotRevisable when t
// cannot say how.
func Revise(t Tool, p Payload, text string) (Payload, error) {
	r, ok := t.(Reviser)
	if !ok || t == nil {
		return Payload{}, ErrNotRevisable
	}
	return r.Revise(p, text)
}

// reviseText is a message's payload with its text replaced, split anew.
func reviseText(p Payload, text string) (Payload, error) {
	return newPayload(p.Action, SendArgs{ChatID: p.Target, Text: text, ParseMode: p.ParseMode}), nil
}

// Revise implements Reviser.
func (SendMessage) Revise(p Payload, text string) (Payload, error) { return reviseText(p, text) }

// Revise implements Reviser.
func (PublishPost) Revise(p Payload, text string) (Payload, error) { return reviseText(p, text) }

// Revise implements Reviser: the new text (or caption) the edit sets.
func (EditMessage) Revise(p Payload, text string) (Payload, error) {
	p.Text = text
	return p, nil
}

// Revise implements Reviser: the file's caption.
func (sendFile) Revise(p Payload, text string) (Payload, error) {
	p.Text = text
	return p, nil
}
