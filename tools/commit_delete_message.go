package tools

import (
	"context"
	_ "embed"
	"encoding/json"
	"errors"
	"time"

	"github.com/countersign/countersign/action"
	"github.com/countersign/countersign/policy"
)

//go:embed commit_delete_message.md
var deleteMessageDoc string

// DeleteWindow is how long after sending a message a bot may delete it for
// everyone: Telegram's rule, checked before any card so that nobody approves a
// delete that cannot happen.
const DeleteWindow = 48 * time.Hour

// Deleter deletes a message this bot sent (Telegram's deleteMessage). Its
// errors are a Sender's, and ErrAlreadyDone when the message is already gone.
type Deleter interface {
	Delete(ctx context.Context, target string, messageID int64) error
}

// DeleteMessage deletes a message this bot sent. It is state-setting: deleting
// a deleted message leaves it deleted ("message to delete not found"), so the
// operator settles an unknown outcome by repeating it. The card quotes the
// message it removes.
type DeleteMessage struct{ Deleter Deleter }

var (
	_ Classed = DeleteMessage{}
	_ Reader  = DeleteMessage{}
)

// Name implements Tool.
func (DeleteMessage) Name() string { return "commit_delete_message" }

// Description implements Tool.
func (DeleteMessage) Description() string { return deleteMessageDoc }

// Params implements Tool.
func (DeleteMessage) Params() Params { return messageParams() }

// Idempotency implements Classed.
func (DeleteMessage) Idempotency() policy.Idempotency { return policy.StateSetting }

// Prepare implements Tool; the operator calls PrepareFrom instead.
func (DeleteMessage) Prepare(json.RawMessage) (action.Payload, error) {
	return action.Payload{}, errNeedsSent
}

// PrepareFrom implements Reader. The message must be one the journal shows this
// bot sent, not deleted since, and younger than DeleteWindow; the payload quotes
// what it reads now.
func (t DeleteMessage) PrepareFrom(ctx context.Context, raw json.RawMessage, sent Sent) (action.Payload, error) {
	in, err := readArgs(t.Name(), raw, messageShape)
	if err != nil {
		return action.Payload{}, err
	}
	m, err := sentMessage(ctx, in, sent, "deleted")
	if err != nil {
		return action.Payload{}, err
	}
	if age := sent.Now().Sub(m.Sent); age >= DeleteWindow {
		return action.Payload{}, in.refuse("message %d in chat %s was sent %s ago: Telegram lets a bot delete a message for everyone only within %s of sending it",
			m.MessageID, m.Chat, age.Round(time.Minute), DeleteWindow)
	}
	return action.Payload{Action: action.DeleteMessage, Target: m.Chat, MessageID: m.MessageID, Before: m.Text, Removes: true}, nil
}

// Show implements Presenter: the message it removes, quoted.
func (DeleteMessage) Show(p action.Payload) Shown {
	return Shown{Facts: []string{change(p, "Deletes, for everyone,")}}
}

// Commit implements Committer. A message already gone (ErrAlreadyDone, with the
// evidence) is the delete landed, by this call or an earlier one.
func (t DeleteMessage) Commit(ctx context.Context, p action.Payload) (action.Evidence, error) {
	ev := action.Evidence{ChatID: p.Target, MessageIDs: []int64{p.MessageID}}
	err := t.Deleter.Delete(ctx, p.Target, p.MessageID)
	if err != nil && !errors.Is(err, ErrAlreadyDone) {
		return action.Evidence{}, err
	}
	return ev, err
}
