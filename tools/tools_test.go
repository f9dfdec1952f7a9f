package tools_test

import (
	"encoding/json"
	"errors"
	"reflect"
	"strings"
	"testing"

	"github.com/countersign/countersign/action"
	"github.com/countersign/countersign/policy"
	"github.com/countersign/countersign/tools"
)

func parse(t *testing.T, src string) *policy.Policy {
	t.Helper()
	p, err := policy.Parse(strings.NewReader(src))
	if err != nil {
		t.Fatal(err)
	}
	return p
}

func TestRegistryFollowsThePolicy(t *testing.T) {
	p := parse(t, "tools:\n  prepare_reply:\n    side_effect: none\n  commit_send_message:\n    side_effect: committed\n    approval: required\n")
	r, err := tools.NewRegistry(p, nil)
	if err != nil {
		t.Fatal(err)
	}
	if got := strings.Join(r.Names(), ","); got != "commit_send_message,prepare_reply" {
		t.Errorf("offered = %s, want only the declared tools", got)
	}
	if _, ok := r.Get("commit_publish_post"); ok {
		t.Error("an implemented tool missing from the policy is offered")
	}
}

func TestRegistryRefusesAPolicyItCannotHonour(t *testing.T) {
	tests := map[string]struct{ src, tool string }{
		"no implementation": {"tools:\n  commit_launch_rocket:\n    side_effect: committed\n    approval: required\n", "commit_launch_rocket"},
		// A repeat of a send sends it twice: no policy may make a send state-setting.
		"a send declared state-setting":  {"tools:\n  commit_send_message:\n    side_effect: committed\n    approval: required\n    idempotency: state_setting\n", "commit_send_message"},
		"a photo declared state-setting": {"tools:\n  commit_send_photo:\n    side_effect: committed\n    approval: required\n    idempotency: state_setting\n", "commit_send_photo"},
	}
	for name, tt := range tests {
		if _, err := tools.NewRegistry(parse(t, tt.src), nil); err == nil || !strings.Contains(err.Error(), tt.tool) {
			t.Errorf("%s: NewRegistry = %v, want an error naming %s", name, err, tt.tool)
		}
	}
}

// A process whose transport cannot edit (an MCP server beside the bot, a
// policy check) offers the same tools as the bot; a commit of what it cannot do
// stops with nothing sent, and no retry.
func TestACommitTheTransportCannotDoStopsWithNothingSent(t *testing.T) {
	p := parse(t, "tools:\n  commit_edit_message:\n    side_effect: committed\n    approval: required\n")
	r, err := tools.NewRegistry(p, nil)
	if err != nil {
		t.Fatal(err)
	}
	edit, ok := r.Get("commit_edit_message")
	if !ok {
		t.Fatal("commit_edit_message is not offered")
	}
	_, err = edit.(tools.Committer).Commit(t.Context(), action.Payload{Action: action.EditMessage, Target: "222", MessageID: 1, Text: "x"})
	var refused *tools.RefusedError
	if !errors.As(err, &refused) || errors.Is(err, tools.ErrNotSent) {
		t.Errorf("Commit = %v, want a refusal that is not a retryable never-sent", err)
	}
}

func TestPrepareValidatesArguments(t *testing.T) {
	tests := []struct {
		name, args string
		want       action.Payload
		wantErr    string
	}{
		{"chat id", `{"chat_id":"222","text":"hi "}`, action.Payload{Action: "send_message", Target: "222", Text: "hi "}, ""},
		{"channel", `{"chat_id":"@news_room","text":"x","parse_mode":"HTML"}`, action.Payload{Action: "send_message", Target: "@news_room", Text: "x", ParseMode: "HTML"}, ""},
		{"negative group id", `{"chat_id":"-1001234567890","text":"x"}`, action.Payload{Action: "send_message", Target: "-1001234567890", Text: "x"}, ""},
		{"bad chat", `{"chat_id":"alice","text":"x"}`, action.Payload{}, "not a chat id"},
		{"empty text", `{"chat_id":"1","text":"  "}`, action.Payload{}, "text is empty"},
		{"unknown field ignored", `{"chat_id":"1","text":"x","silent":true}`, action.Payload{Action: "send_message", Target: "1", Text: "x"}, ""},
		{"not json", `chat 1`, action.Payload{}, "arguments must be a JSON object"},
		{"bad parse mode", `{"chat_id":"1","text":"x","parse_mode":"BBCode"}`, action.Payload{}, "parse_mode"},
	}
	for _, tt := range tests {
		got, err := tools.SendMessage{}.Prepare(json.RawMessage(tt.args))
		var ae *tools.ArgsError
		switch {
		case tt.wantErr == "" && err != nil:
			t.Errorf("%s: Prepare = %v", tt.name, err)
		case tt.wantErr != "" && (!errors.As(err, &ae) || !strings.Contains(err.Error(), tt.wantErr)):
			t.Errorf("%s: Prepare error = %v, want an ArgsError with %q", tt.name, err, tt.wantErr)
		case !reflect.DeepEqual(got, tt.want):
			t.Errorf("%s: Prepare = %+v, want %+v", tt.name, got, tt.want)
		}
	}
}

func TestFingerprintIgnoresKeyOrderAndSpacing(t *testing.T) {
	a := tools.Fingerprint(tools.SendMessage{}, json.RawMessage(`{"chat_id":"1","text":"x"}`))
	b := tools.Fingerprint(tools.SendMessage{}, json.RawMessage(`{ "text": "x",  "chat_id": "1" }`))
	c := tools.Fingerprint(tools.SendMessage{}, json.RawMessage(`{"chat_id":"1","text":"y"}`))
	d := tools.Fingerprint(tools.PublishPost{}, json.RawMessage(`{"chat_id":"1","text":"x"}`))
	if a != b {
		t.Error("same call, other key order: fingerprints differ")
	}
	if a == c || a == d {
		t.Error("different calls share a fingerprint")
	}
}

// TestPrepareNormalisesTheTarget: the payload, and so its hash, the approval card, the
// journal and every check after it, names each chat one way.
func TestPrepareNormalisesTheTarget(t *testing.T) {
	tests := []struct{ name, chat, want string }{
		{"plus sign", "+222", "222"},
		{"leading zero", "0222", "222"},
		{"channel id", "-1001234567890", "-1001234567890"},
		{"username case", "@News_Desk", "@news_desk"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			args, _ := json.Marshal(tools.SendArgs{ChatID: tt.chat, Text: "hi"})
			for _, tool := range []tools.Tool{tools.SendMessage{}, tools.PublishPost{}} {
				p, err := tool.Prepare(args)
				if err != nil || p.Target != tt.want {
					t.Errorf("%s.Prepare(chat_id %q): target %q, %v; want %q", tool.Name(), tt.chat, p.Target, err, tt.want)
				}
			}
		})
	}
	_, err := tools.SendMessage{}.Prepare(json.RawMessage(`{"chat_id":"0","text":"hi"}`))
	var ae *tools.ArgsError
	if !errors.As(err, &ae) || !strings.Contains(ae.Reason, `chat_id "0"`) {
		t.Errorf("Prepare(chat_id 0) = %v, want an ArgsError naming chat_id", err)
	}
}

// TestFingerprintSeesTargetAliases: the loop guard knows a call to +222 after a failed
// one to 222 for the same call.
func TestFingerprintSeesTargetAliases(t *testing.T) {
	a := tools.Fingerprint(tools.SendMessage{}, json.RawMessage(`{"chat_id":"222","text":"x"}`))
	for _, alias := range []string{`+222`, `0222`, ` 222`} {
		b := tools.Fingerprint(tools.SendMessage{}, json.RawMessage(`{"chat_id":"`+alias+`","text":"x"}`))
		if a != b {
			t.Errorf("chat_id %q: fingerprint differs from chat_id 222", alias)
		}
	}
	u := tools.Fingerprint(tools.SendMessage{}, json.RawMessage(`{"chat_id":"@news_desk","text":"x"}`))
	if v := tools.Fingerprint(tools.SendMessage{}, json.RawMessage(`{"chat_id":"@News_Desk","text":"x"}`)); u != v {
		t.Error("@News_Desk: fingerprint differs from @news_desk")
	}
}
