package tools

import (
	"context"
	_ "embed"
	"encoding/json"
	"fmt"

	"github.com/countersign/countersign/action"
	"github.com/countersign/countersign/policy"
	"github.com/countersign/countersign/verifier"
)

//go:embed commit_send_poll.md
var sendPollDoc string

// Poller sends a poll (Telegram's sendPoll). Its errors are a Sender's.
type Poller interface {
	SendPoll(ctx context.Context, target, question string, p action.Poll) (Delivery, error)
}

// SendPoll is commit_send_poll: a question and its options. It is additive:
// each call adds a poll.
type SendPoll struct{ Poller Poller }

var (
	_ Presenter = SendPoll{}
	_ Checked   = SendPoll{}
	_ Classed   = SendPoll{}
)

// Name implements Tool.
func (SendPoll) Name() string { return "commit_send_poll" }

// Description implements Tool.
func (SendPoll) Description() string { return sendPollDoc }

// Params implements Tool.
func (SendPoll) Params() Params {
	return committing(Params{Properties: map[string]any{
		"chat_id":  map[string]any{"type": "string", "description": "the chat id (\"-1001234567890\") or @username to send to"},
		"question": map[string]any{"type": "string", "description": "the question, 1 to 300 characters"},
		"options":  map[string]any{"type": "array", "items": map[string]any{"type": "string"}, "minItems": 2, "maxItems": 12, "description": "the answers, in order, 1 to 100 characters each"},
		"public":   map[string]any{"type": "boolean", "description": "show who voted (default: anonymous)"},
		"multiple": map[string]any{"type": "boolean", "description": "allow several answers (default: one)"},
	}, Required: []string{"chat_id", "question", "options"}})
}

// Idempotency implements Classed: each call adds a poll.
func (SendPoll) Idempotency() policy.Idempotency { return policy.Additive }

const pollShape = `{"chat_id": "222", "question": "...", "options": ["yes", "no"]}`

// Prepare implements Tool. The limits are the verifier's to check.
func (t SendPoll) Prepare(raw json.RawMessage) (action.Payload, error) {
	in, err := readArgs(t.Name(), raw, pollShape)
	if err != nil {
		return action.Payload{}, err
	}
	chat, err := in.target()
	if err != nil {
		return action.Payload{}, err
	}
	question, err := in.string("question", true)
	if err != nil {
		return action.Payload{}, err
	}
	if err := in.checkText(question); err != nil {
		return action.Payload{}, err
	}
	var p action.Poll
	if v := in.value("options"); v == nil || json.Unmarshal(v, &p.Options) != nil {
		return action.Payload{}, in.refuse("options: want a list of strings, got %s", kindOf(in.value("options")))
	}
	for _, o := range p.Options {
		if err := in.checkText(o); err != nil {
			return action.Payload{}, in.refuse("an option: %v", err)
		}
	}
	if p.Public, err = in.bool("public"); err != nil {
		return action.Payload{}, err
	}
	if p.Multiple, err = in.bool("multiple"); err != nil {
		return action.Payload{}, err
	}
	return action.Payload{Action: action.SendPoll, Target: chat, Text: question, Poll: &p}, nil
}

// Show implements Presenter: the options in order, and who sees the votes.
func (SendPoll) Show(p action.Payload) Shown {
	s := Shown{TextLabel: "Question"}
	if p.Poll == nil {
		return s
	}
	who, answers := "anonymous", "one answer each"
	if p.Poll.Public {
		who = "public: members see who voted for what"
	}
	if p.Poll.Multiple {
		answers = "several answers allowed"
	}
	s.Facts = append(s.Facts, fmt.Sprintf("Sends a poll (%s; %s) with %d options:", who, answers, len(p.Poll.Options)))
	for i, o := range p.Poll.Options {
		s.Facts = append(s.Facts, fmt.Sprintf("%d. %s", i+1, o))
	}
	return s
}

// Check implements Checked: the question as a text, and the options against
// Telegram's limits.
func (SendPoll) Check(p action.Payload) verifier.Input {
	in := verifier.Input{Action: p.Action, Target: p.Target, Text: p.Text, Options: []string{}}
	if p.Poll != nil {
		in.Options = p.Poll.Options
	}
	return in
}

// Commit implements Committer.
func (t SendPoll) Commit(ctx context.Context, p action.Payload) (action.Evidence, error) {
	if p.Poll == nil {
		err := fmt.Errorf("a poll payload without options")
		return action.Evidence{}, &RefusedError{Reason: err.Error(), Err: err}
	}
	d, err := t.Poller.SendPoll(ctx, p.Target, p.Text, *p.Poll)
	if err != nil {
		return action.Evidence{}, err
	}
	return action.Evidence{ChatID: d.ChatID, MessageIDs: []int64{d.MessageID}}, nil
}
