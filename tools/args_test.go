package tools_test

import (
	"encoding/json"
	"errors"
	"reflect"
	"strings"
	"testing"

	"github.com/countersign/countersign/tools"
)

// TestArgumentsAsModelsSendThem: models write chat_id as a number (Telegram's API
// takes "Integer or String"), send null for an option they leave out, and add keys
// of their own. Those calls are read as meant; anything else is a repair that names
// the field and says what it wants.
func TestArgumentsAsModelsSendThem(t *testing.T) {
	send := func(target, text string) tools.Payload {
		return tools.Payload{Action: "send_message", Target: target, Text: text}
	}
	tests := []struct {
		name, args string
		want       tools.Payload
		wantErr    []string // each must be in the ArgsError's reason
	}{
		{"chat id as a number", `{"chat_id":222,"text":"hi"}`, send("222", "hi"), nil},
		{"channel id as a number", `{"chat_id":-1001234567890,"text":"hi"}`, send("-1001234567890", "hi"), nil},
		{"parse_mode null", `{"chat_id":"222","text":"hi","parse_mode":null}`, send("222", "hi"), nil},
		{"unknown keys ignored", `{"chat_id":"222","text":"hi","disable_notification":true,"reply_markup":{"x":1}}`, send("222", "hi"), nil},
		{"exponent", `{"chat_id":1e3,"text":"hi"}`, tools.Payload{}, []string{"chat_id", "1e3", "whole number"}},
		{"fraction", `{"chat_id":1.5,"text":"hi"}`, tools.Payload{}, []string{"chat_id", "1.5", "whole number"}},
		{"zero", `{"chat_id":0,"text":"hi"}`, tools.Payload{}, []string{"chat_id 0", "not a chat id"}},
		{"chat id a list", `{"chat_id":[222],"text":"hi"}`, tools.Payload{}, []string{"chat_id", "a list"}},
		{"chat id missing", `{"text":"hi"}`, tools.Payload{}, []string{"chat_id", "missing"}},
		{"chat id null", `{"chat_id":null,"text":"hi"}`, tools.Payload{}, []string{"chat_id", "missing"}},
		{"text a number", `{"chat_id":"222","text":5}`, tools.Payload{}, []string{"text", "want a string", "a number"}},
		{"text missing", `{"chat_id":"222"}`, tools.Payload{}, []string{"text", "missing"}},
		{"parse_mode a number", `{"chat_id":"222","text":"hi","parse_mode":1}`, tools.Payload{}, []string{"parse_mode", "HTML", "MarkdownV2"}},
		{"not an object", `["222","hi"]`, tools.Payload{}, []string{"JSON object", "chat_id", "a list"}},
		{"not json", `chat 222`, tools.Payload{}, []string{"JSON object", "chat_id"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := tools.SendMessage{}.Prepare(json.RawMessage(tt.args))
			var ae *tools.ArgsError
			switch {
			case tt.wantErr == nil && err != nil:
				t.Fatalf("Prepare(%s) = %v, want %+v", tt.args, err, tt.want)
			case tt.wantErr != nil && !errors.As(err, &ae):
				t.Fatalf("Prepare(%s) = %+v, %v; want an ArgsError", tt.args, got, err)
			case !reflect.DeepEqual(got, tt.want):
				t.Errorf("Prepare(%s) = %+v, want %+v", tt.args, got, tt.want)
			}
			for _, w := range tt.wantErr {
				if !strings.Contains(ae.Reason, w) {
					t.Errorf("reason = %q, want it to contain %q", ae.Reason, w)
				}
			}
		})
	}
}

// TestEveryToolReadsArgumentsAlike: the rules hold for every tool, not only
// commit_send_message.
func TestEveryToolReadsArgumentsAlike(t *testing.T) {
	p, err := tools.PublishPost{}.Prepare(json.RawMessage(`{"chat_id":-1001234567890,"text":"post","parse_mode":null,"pin":true}`))
	if err != nil || p.Target != "-1001234567890" || p.Action != "publish_post" {
		t.Errorf("publish with a numeric channel id = %+v, %v; want the post to -1001234567890", p, err)
	}
	p, err = tools.PrepareReply{}.Prepare(json.RawMessage(`{"text":" a draft ","tone":"warm"}`))
	if err != nil || p.Text != "a draft" {
		t.Errorf("draft with an extra key = %+v, %v; want the draft", p, err)
	}
	_, err = tools.PrepareReply{}.Prepare(json.RawMessage(`{"text":42}`))
	var ae *tools.ArgsError
	if !errors.As(err, &ae) || !strings.Contains(ae.Reason, "text") || !strings.Contains(ae.Reason, "a number") {
		t.Errorf("draft with a numeric text = %v, want an ArgsError naming text and what it got", err)
	}
}
