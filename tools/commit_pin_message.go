package tools

import (
	"context"
	_ "embed"
	"encoding/json"

	"github.com/countersign/countersign/action"
	"github.com/countersign/countersign/policy"
)

//go:embed commit_pin_message.md
var pinMessageDoc string

//go:embed commit_unpin_message.md
var unpinMessageDoc string

// Pinner pins and unpins messages this bot sent, and reads a chat's pinned
// message (Telegram's pinChatMessage, unpinChatMessage and getChat). Its
// errors are a Sender's.
type Pinner interface {
	Pin(ctx context.Context, target string, messageID int64, notify bool) error
	Unpin(ctx context.Context, target string, messageID int64) error
	// Pinned is the id of the chat's most recently pinned message, 0 for none.
	Pinned(ctx context.Context, target string) (int64, error)
}

// StateReader is a state-setting tool whose unknown outcome is settled by
// reading the state, not by repeating the call, because a repeat has a cost
// (a pin that notifies the chat's members notifies them again). Landed reports
// whether p's change is in the world, with its evidence; an error when the
// state could not be read.
type StateReader interface {
	Classed
	Landed(ctx context.Context, p action.Payload) (action.Evidence, bool, error)
}

// PinMessage pins a message this bot sent, silently unless the caller asks to
// notify. It is state-setting; its unknown outcomes are settled by reading the
// chat's pinned message (StateReader), so members are never notified twice.
type PinMessage struct{ Pinner Pinner }

var (
	_ StateReader = PinMessage{}
	_ Reader      = PinMessage{}
)

// Name implements Tool.
func (PinMessage) Name() string { return "commit_pin_message" }

// Description implements Tool.
func (PinMessage) Description() string { return pinMessageDoc }

// Params implements Tool.
func (PinMessage) Params() Params {
	p := messageParams()
	p.Properties["notify"] = map[string]any{"type": "boolean", "description": "tell the chat's members (default: pin silently)"}
	return p
}

// Idempotency implements Classed.
func (PinMessage) Idempotency() policy.Idempotency { return policy.StateSetting }

// Prepare implements Tool; the operator calls PrepareFrom instead.
func (PinMessage) Prepare(json.RawMessage) (action.Payload, error) {
	return action.Payload{}, errNeedsSent
}

// PrepareFrom implements Reader.
func (t PinMessage) PrepareFrom(ctx context.Context, raw json.RawMessage, sent Sent) (action.Payload, error) {
	in, err := readArgs(t.Name(), raw, messageShape)
	if err != nil {
		return action.Payload{}, err
	}
	notify, err := in.bool("notify")
	if err != nil {
		return action.Payload{}, err
	}
	m, err := sentMessage(ctx, in, sent, "pinned")
	if err != nil {
		return action.Payload{}, err
	}
	return action.Payload{Action: action.PinMessage, Target: m.Chat, MessageID: m.MessageID, Before: m.Text, Notify: notify}, nil
}

// Show implements Presenter: the message, and whether the members are told.
func (PinMessage) Show(p action.Payload) Shown {
	verb := "Pins, silently,"
	if p.Notify {
		verb = "Pins, notifying the chat's members,"
	}
	return Shown{Facts: []string{change(p, verb)}}
}

// Commit implements Committer.
func (t PinMessage) Commit(ctx context.Context, p action.Payload) (action.Evidence, error) {
	if err := t.Pinner.Pin(ctx, p.Target, p.MessageID, p.Notify); err != nil {
		return action.Evidence{}, err
	}
	return action.Evidence{ChatID: p.Target, MessageIDs: []int64{p.MessageID}}, nil
}

// Landed implements StateReader: the pin landed when the chat's pinned message
// is p's.
func (t PinMessage) Landed(ctx context.Context, p action.Payload) (action.Evidence, bool, error) {
	id, err := t.Pinner.Pinned(ctx, p.Target)
	if err != nil {
		return action.Evidence{}, false, err
	}
	return action.Evidence{ChatID: p.Target, MessageIDs: []int64{p.MessageID}}, id == p.MessageID, nil
}

// UnpinMessage unpins a message this bot sent. It is state-setting, and a
// repeat costs nothing (an unpin is silent), so its unknown outcomes are
// settled by repeating it.
type UnpinMessage struct{ Pinner Pinner }

var (
	_ Classed = UnpinMessage{}
	_ Reader  = UnpinMessage{}
)

// Name implements Tool.
func (UnpinMessage) Name() string { return "commit_unpin_message" }

// Description implements Tool.
func (UnpinMessage) Description() string { return unpinMessageDoc }

// Params implements Tool.
func (UnpinMessage) Params() Params { return messageParams() }

// Idempotency implements Classed.
func (UnpinMessage) Idempotency() policy.Idempotency { return policy.StateSetting }

// Prepare implements Tool; the operator calls PrepareFrom instead.
func (UnpinMessage) Prepare(json.RawMessage) (action.Payload, error) {
	return action.Payload{}, errNeedsSent
}

// PrepareFrom implements Reader.
func (t UnpinMessage) PrepareFrom(ctx context.Context, raw json.RawMessage, sent Sent) (action.Payload, error) {
	in, err := readArgs(t.Name(), raw, messageShape)
	if err != nil {
		return action.Payload{}, err
	}
	m, err := sentMessage(ctx, in, sent, "unpinned")
	if err != nil {
		return action.Payload{}, err
	}
	return action.Payload{Action: action.UnpinMessage, Target: m.Chat, MessageID: m.MessageID, Before: m.Text}, nil
}

// Show implements Presenter.
func (UnpinMessage) Show(p action.Payload) Shown { return Shown{Facts: []string{change(p, "Unpins")}} }

// Commit implements Committer.
func (t UnpinMessage) Commit(ctx context.Context, p action.Payload) (action.Evidence, error) {
	if err := t.Pinner.Unpin(ctx, p.Target, p.MessageID); err != nil {
		return action.Evidence{}, err
	}
	return action.Evidence{ChatID: p.Target, MessageIDs: []int64{p.MessageID}}, nil
}
