package tools

import (
	"context"
	_ "embed"
	"encoding/json"

	"github.com/countersign/countersign/action"
)

//go:embed commit_publish_post.md
var publishPostDoc string

// PublishPost publishes a post to a channel. Like SendMessage it changes the world
// and is approved by a human first; it is a separate tool so that a policy can treat
// public posts differently from chat messages.
type PublishPost struct{ Sender Sender }

var _ Committer = PublishPost{}

// Name implements Tool.
func (PublishPost) Name() string { return "commit_publish_post" }

// Description implements Tool.
func (PublishPost) Description() string { return publishPostDoc }

// Params implements Tool.
func (PublishPost) Params() Params { return sendParams("publish in") }

// Prepare implements Tool. The text is kept exactly as given.
func (t PublishPost) Prepare(args json.RawMessage) (action.Payload, error) {
	a, err := decodeSendArgs(t.Name(), args)
	if err != nil {
		return action.Payload{}, err
	}
	return newPayload(action.PublishPost, a), nil
}

// Commit implements Committer.
func (t PublishPost) Commit(ctx context.Context, p action.Payload) (action.Evidence, error) {
	return deliver(ctx, t.Sender, p)
}
