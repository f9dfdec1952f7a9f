package command_test

import (
	"errors"
	"testing"

	"github.com/countersign/countersign/command"
)

func TestParse(t *testing.T) {
	tests := []struct {
		line    string
		want    command.Command
		wantErr string
	}{
		{"/send 222 hello", command.Command{Name: "send", Target: "222", Text: "hello"}, ""},
		{"/send 222  two  spaces kept ", command.Command{Name: "send", Target: "222", Text: " two  spaces kept "}, ""},
		{"/send -100123 line one\nline two", command.Command{Name: "send", Target: "-100123", Text: "line one\nline two"}, ""},
		{"/send 222\nnext line", command.Command{Name: "send", Target: "222", Text: "next line"}, ""},
		{"/publish@countersign_bot @news_desk Big news", command.Command{Name: "publish", Target: "@news_desk", Text: "Big news"}, ""},
		{"/draft  hi", command.Command{Name: "draft", Text: " hi"}, ""},
		{"/ops", command.Command{Name: "ops"}, ""},
		{"/resolve op-7k2m9q delivered", command.Command{Name: "resolve", OpID: "op-7k2m9q", Delivered: true}, ""},
		{"/resolve op-7k2m9q not_delivered", command.Command{Name: "resolve", OpID: "op-7k2m9q"}, ""},
		{"/retry op-7k2m9q", command.Command{Name: "retry", OpID: "op-7k2m9q"}, ""},
		{"/send 222", command.Command{}, "usage: /send <chat_id> <text>"},
		{"/send", command.Command{}, "usage: /send <chat_id> <text>"},
		{"/resolve op-1 maybe", command.Command{}, "usage: /resolve <op_id> delivered|not_delivered"},
		{"/retry", command.Command{}, "usage: /retry <op_id>"},
		{"/retry 222", command.Command{}, `usage: /retry <op_id>; "222" is not an operation id (op-…, as /ops lists them)`},
		{"/retry op-", command.Command{}, `usage: /retry <op_id>; "op-" is not an operation id (op-…, as /ops lists them)`},
		{"/cancel a b", command.Command{}, "usage: /cancel <op_id>"},
		{"/launch", command.Command{}, "usage: unknown command /launch; try /help"},
		{"hello", command.Command{}, "usage: commands start with /; try /help"},
		{"/ops now", command.Command{}, "usage: /ops"},
		{"/new", command.Command{Name: "new"}, ""},
		{"/new@countersign_bot", command.Command{Name: "new"}, ""},
		{"/new session", command.Command{}, "usage: /new"},
		{"/start", command.Command{Name: "start"}, ""},
		{"/start pair-from-link", command.Command{Name: "start"}, ""},
		{"/whoami", command.Command{Name: "whoami"}, ""},
		{"/whoami@countersign_bot", command.Command{Name: "whoami"}, ""},
		{"/whoami 111", command.Command{}, "usage: /whoami"},
	}
	for _, tt := range tests {
		got, err := command.Parse(tt.line)
		if tt.wantErr != "" {
			if !errors.Is(err, command.ErrUsage) || err.Error() != tt.wantErr {
				t.Errorf("Parse(%q) error = %v, want %q", tt.line, err, tt.wantErr)
			}
			continue
		}
		if err != nil || got != tt.want {
			t.Errorf("Parse(%q) = %+v, %v; want %+v", tt.line, got, err, tt.want)
		}
	}
}
