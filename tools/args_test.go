package tools_test

import (
	"encoding/json"
	"errors"
	"reflect"
	"strings"
	"testing"

	"github.com/countersign/countersign/action"
	"github.com/countersign/countersign/tools"
)

// TestArgumentsAsModelsSendThem: models write chat_id as a number (Telegram's API
// takes "Integer or String"), send null for an option they leave out, and add keys
// of their own. Those calls are read as meant; anything else is a repair that names
// the field and says what it wants.
func TestArgumentsAsModelsSendThem(t *testing.T) {
	send := func(target, text string) action.Payload {
		return action.Payload{Action: "send_message", Target: target, Text: text}
	}
	tests := []struct {
		name, args string
		want       action.Payload
		wantErr    []string // each must be in the ArgsError's reason
	}{
		{"chat id as a number", `{"chat_id":222,"text":"hi"}`, send("222", "hi"), nil},
		{"channel id as a number", `{"chat_id":-1001234567890,"text":"hi"}`, send("-1001234567890", "hi"), nil},
		{"parse_mode null", `{"chat_id":"222","text":"hi","parse_mode":null}`, send("222", "hi"), nil},
		{"unknown keys ignored", `{"chat_id":"222","text":"hi","disable_notification":true,"reply_markup":{"x":1}}`, send("222", "hi"), nil},
		{"exponent", `{"chat_id":1e3,"text":"hi"}`, action.Payload{}, []string{"chat_id", "1e3", "whole number"}},
		{"fraction", `{"chat_id":1.5,"text":"hi"}`, action.Payload{}, []string{"chat_id", "1.5", "whole number"}},
		{"zero", `{"chat_id":0,"text":"hi"}`, action.Payload{}, []string{"chat_id 0", "not a chat id"}},
		{"chat id a list", `{"chat_id":[222],"text":"hi"}`, action.Payload{}, []string{"chat_id", "a list"}},
		{"chat id missing", `{"text":"hi"}`, action.Payload{}, []string{"chat_id", "missing"}},
		{"chat id null", `{"chat_id":null,"text":"hi"}`, action.Payload{}, []string{"chat_id", "missing"}},
		{"text a number", `{"chat_id":"222","text":5}`, action.Payload{}, []string{"text", "want a string", "a number"}},
		{"text missing", `{"chat_id":"222"}`, action.Payload{}, []string{"text", "missing"}},
		{"parse_mode a number", `{"chat_id":"222","text":"hi","parse_mode":1}`, action.Payload{}, []string{"parse_mode", "HTML", "MarkdownV2"}},
		{"not an object", `["222","hi"]`, action.Payload{}, []string{"JSON object", "chat_id", "a list"}},
		{"not json", `chat 222`, action.Payload{}, []string{"JSON object", "chat_id"}},
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

// TestFingerprintReadsArgumentsAsTheToolDoes: the loop guard knows a call however
// the caller spells it, and tells different calls apart.
func TestFingerprintReadsArgumentsAsTheToolDoes(t *testing.T) {
	fp := func(args string) string { return tools.Fingerprint(tools.SendMessage{}, json.RawMessage(args)) }
	base := fp(`{"chat_id":"222","text":"hi"}`)
	for _, same := range []string{
		`{"chat_id":222,"text":"hi"}`,
		`{"text":"hi","chat_id":"+222"}`,
		`{"chat_id":"222","text":"hi","parse_mode":null}`,
		`{"chat_id":"222","text":"hi","parse_mode":""}`,
		`{"chat_id":"222","text":"hi","silent":true}`,
	} {
		if fp(same) != base {
			t.Errorf("%s: fingerprint differs from the same call written plainly", same)
		}
	}
	for _, other := range []string{
		`{"chat_id":"222","text":"hi "}`,
		`{"chat_id":"222","text":"hi","parse_mode":"HTML"}`,
		`{"chat_id":223,"text":"hi"}`,
		`{"chat_id":222.5,"text":"hi"}`,
	} {
		if fp(other) == base {
			t.Errorf("%s: shares the fingerprint of another call", other)
		}
	}
	if tools.Fingerprint(tools.PublishPost{}, json.RawMessage(`{"chat_id":"222","text":"hi"}`)) == base {
		t.Error("two tools with the same arguments share a fingerprint")
	}
}

func TestBriefNamesTheCall(t *testing.T) {
	tests := []struct{ args, want string }{
		{`{"text":"Hello","chat_id":222,"parse_mode":null,"x":1}`, `commit_send_message(chat_id: "222", text: "Hello")`},
		{`{"chat_id":"the team","text":"` + strings.Repeat("a", 50) + `"}`, `commit_send_message(chat_id: "the team", text: "` + strings.Repeat("a", 40) + `…")`},
		{`{"chat_id":1.5,"text":"the token is 123456789:AAHdqTcvCH1vGWJxfSeofSAs0K5PALDsaw1"}`, `commit_send_message(chat_id: 1.5, text: (withheld: it looks like a secret))`},
		{`[1]`, `commit_send_message(arguments that are not a JSON object)`},
	}
	for _, tt := range tests {
		if got := tools.Brief(tools.SendMessage{}, json.RawMessage(tt.args)); got != tt.want {
			t.Errorf("Brief(%s) = %s, want %s", tt.args, got, tt.want)
		}
	}
}
