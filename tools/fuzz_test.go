package tools_test

import (
	"context"
	"encoding/json"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/countersign/countersign/action"
	"github.com/countersign/countersign/policy"
	"github.com/countersign/countersign/tools"
)

// noneSent is a journal view in which this bot sent one message: 5 in chat
// 222, reading "hello".
type noneSent struct{}

func (noneSent) Message(_ context.Context, chat string, id int64) (tools.SentMessage, error) {
	if chat == "222" && id == 5 {
		return tools.SentMessage{OperationID: "op-sent", Chat: "222", MessageID: 5, Text: "hello", Sent: time.Now()}, nil
	}
	return tools.SentMessage{}, tools.ErrNotSentHere
}

func (noneSent) Operation(context.Context, string) ([]tools.SentMessage, error) {
	return nil, tools.ErrNotSentHere
}
func (noneSent) Now() time.Time { return time.Now() }

// FuzzActionArguments feeds any arguments to the tools of every kind of action
// beyond a text (a poll, a forward, a copy, a photo, a document, an album, an
// edit, a delete, a pin, an unpin): each either refuses
// them with an *ArgsError or prepares a payload that names its chat once, in
// its normal form, with no file it did not read. No source outside the roots
// (none here) or on a private address is ever read.
func FuzzActionArguments(f *testing.F) {
	for _, seed := range []string{
		`{"chat_id": "222", "question": "Lunch?", "options": ["a", "b"]}`,
		`{"chat_id": "@News", "question": "x", "options": [], "public": true}`,
		`{"chat_id": "333", "from_chat_id": "222", "message_id": 5}`,
		`{"chat_id": "333", "operation_id": "op-sent"}`,
		`{"chat_id": "222", "file": "/etc/passwd"}`,
		`{"chat_id": "222", "file": "http://127.0.0.1/a.png", "caption": "x"}`,
		`{"chat_id": "222", "files": ["a.png", "telegram:AgAC"], "as": "document"}`,
		`{"chat_id": 222.5, "files": [{"file": ""}]}`,
		`[]`, `null`, `{"chat_id": "0222", "message_id": "5", "from_chat_id": 222}`,
		`{"chat_id": "222", "message_id": 5, "text": "hi"}`, `{"operation_id": "op-sent", "notify": true}`,
	} {
		f.Add(seed)
	}
	p := &policy.Policy{Tools: map[string]policy.Tool{}}
	for _, n := range []string{"commit_send_poll", "commit_forward_message", "commit_copy_message", "commit_send_photo", "commit_send_album",
		"commit_send_document", "commit_edit_message", "commit_delete_message", "commit_pin_message", "commit_unpin_message"} {
		p.Tools[n] = policy.Tool{SideEffect: policy.SideEffectCommitted, Approval: policy.ApprovalRequired}
	}
	r, err := tools.NewRegistry(p, nil)
	if err != nil {
		f.Fatal(err)
	}
	f.Fuzz(func(t *testing.T, raw string) {
		for _, name := range r.Names() {
			tool, _ := r.Get(name)
			var pl action.Payload
			var err error
			if rd, ok := tool.(tools.Reader); ok {
				pl, err = rd.PrepareFrom(t.Context(), json.RawMessage(raw), noneSent{})
			} else {
				pl, err = tool.Prepare(json.RawMessage(raw))
			}
			var ae *tools.ArgsError
			switch {
			case err != nil && !errors.As(err, &ae):
				t.Fatalf("%s(%s): %v, want an *ArgsError", name, raw, err)
			case err != nil:
				continue
			}
			if norm, nerr := policy.NormalizeTarget(pl.Target); nerr != nil || norm != pl.Target {
				t.Fatalf("%s(%s): target %q is not in its normal form", name, raw, pl.Target)
			}
			if len(pl.Files) > 0 {
				t.Fatalf("%s(%s): read a file with no store and no roots: %+v", name, raw, pl.Files)
			}
			if pl.SHA256() != pl.SHA256() || strings.TrimSpace(pl.Action) == "" {
				t.Fatalf("%s(%s): payload %+v", name, raw, pl)
			}
		}
	})
}
