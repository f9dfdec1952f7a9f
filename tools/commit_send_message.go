package tools

import (
	"context"
	_ "embed"
	"encoding/json"

	"github.com/countersign/countersign/action"
)

//go:embed commit_send_message.md
var sendMessageDoc string

// SendMessage sends a message to a chat. It changes the world: the operator asks a
// human to approve the exact payload first and never resends on an unknown outcome.
type SendMessage struct{ Sender Sender }

var _ Committer = SendMessage{}

// Name implements Tool.
func (SendMessage) Name() string { return "commit_send_message" }

// Description implements Tool.
func (SendMessage) Description() string { return sendMessageDoc }

// Params implements Tool.
func (SendMessage) Params() Params { return sendParams("send to") }

// Prepare implements Tool. The text is kept exactly as given.
func (t SendMessage) Prepare(args json.RawMessage) (action.Payload, error) {
	a, err := decodeSendArgs(t.Name(), args)
	if err != nil {
		return action.Payload{}, err
	}
	return newPayload(action.SendMessage, a), nil
}

// Commit implements Committer.
func (t SendMessage) Commit(ctx context.Context, p action.Payload) (action.Evidence, error) {
	return deliver(ctx, t.Sender, p)
}
