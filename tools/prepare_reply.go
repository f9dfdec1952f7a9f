package tools

import (
	_ "embed"
	"encoding/json"
	"strings"

	"github.com/countersign/countersign/action"
)

//go:embed prepare_reply.md
var prepareReplyDoc string

// PrepareReply drafts a reply. It has no side effect and may be retried freely.
type PrepareReply struct{}

var _ Tool = PrepareReply{}

// Name implements Tool.
func (PrepareReply) Name() string { return "prepare_reply" }

// Description implements Tool.
func (PrepareReply) Description() string { return prepareReplyDoc }

// Params implements Tool.
func (PrepareReply) Params() Params {
	return Params{Properties: map[string]any{"text": map[string]any{"type": "string", "description": "the draft"}},
		Required: []string{"text"}}
}

// Prepare implements Tool: the draft is the text, trimmed.
func (t PrepareReply) Prepare(args json.RawMessage) (action.Payload, error) {
	in, err := readArgs(t.Name(), args, `{"text": "..."}`)
	if err != nil {
		return action.Payload{}, err
	}
	text, err := in.string("text", true)
	if err != nil {
		return action.Payload{}, err
	}
	if strings.TrimSpace(text) == "" {
		return action.Payload{}, in.refuse("text is empty")
	}
	return action.Payload{Action: "reply", Text: strings.TrimSpace(text)}, nil
}
