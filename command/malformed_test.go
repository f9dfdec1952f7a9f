package command_test

import (
	"context"
	"errors"
	"strings"
	"testing"

	"github.com/countersign/countersign/command"
)

// A command whose target names no chat, or whose id names no operation, is
// refused with its usage line before anything is journaled: no task, no
// operation, nothing failed that a person would have to repair.
func TestAMalformedTargetOrIDIsRefusedBeforeAnythingIsJournaled(t *testing.T) {
	tests := []struct {
		line, want string
	}{
		{"/send abc hello", "/send <chat_id> <text>"},
		{"/send @ab hello", "/send <chat_id> <text>"},
		{"/send 0 hello", "/send <chat_id> <text>"},
		{"/publish news hello", "/publish <chat_id> <text>"},
		{"/photo abc https://example.com/a.png", "/photo <chat_id>"},
		{"/document abc https://example.com/a.pdf", "/document <chat_id>"},
		{"/edit abc new text", "/edit <op_id> <text>"},
		{"/delete abc", "/delete <op_id>"},
		{"/pin 222", "/pin <op_id>"},
		{"/unpin abc", "/unpin <op_id>"},
		{"/resolve abc delivered", "/resolve <op_id>"},
		{"/retry abc", "/retry <op_id>"},
		{"/cancel abc", "/cancel <op_id>"},
		{"/grant commit_send_message abc 1h", "/grant <tool> <chat_id>"},
	}
	for i, tt := range tests {
		t.Run(tt.line, func(t *testing.T) {
			w := newWorld(t)
			h := w.start(testPolicy(t, operatorID), "telegram")
			r, err := h.Handle(context.Background(), command.Request{User: operatorID, Chat: "1", Line: tt.line, Origin: "test:" + string(rune('a'+i))})
			if !errors.Is(err, command.ErrUsage) || !strings.Contains(err.Error(), tt.want) {
				t.Errorf("Handle(%q) = %+v, %v; want a usage error saying %q", tt.line, r, err, tt.want)
			}
			if ops := w.operations(); len(ops) != 0 {
				t.Errorf("after %q the journal holds %d operation(s), the first %s in state %s; want none", tt.line, len(ops), ops[0].ID, ops[0].State)
			}
		})
	}
}
