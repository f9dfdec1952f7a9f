package command_test

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"testing"

	"github.com/countersign/countersign/command"
)

// A line that cannot be carried out says what would make it work, in words
// the person can act on: plain text without a model names the variables that
// configure one, and /approve or /reject where a tap decides names the buttons;
// neither is "unknown command", and neither journals anything.
func TestUsageSaysWhatToDo(t *testing.T) {
	tests := []struct {
		name, line string
		want       string
	}{
		{"plain text without a model", "please send hello to 222", command.NoModel},
		{"approve alone", "/approve", command.DecideByTap},
		{"approve with an id", "/approve op-123", command.DecideByTap},
		{"reject with an id", "/reject op-123", command.DecideByTap},
	}
	w := newWorld(t)
	h := w.start(testPolicy(t, approverID), "telegram")
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := h.Handle(context.Background(), command.Request{User: operatorID, Chat: "1", Line: tt.line, Origin: "test:" + tt.name})
			if !errors.Is(err, command.ErrUsage) || !strings.Contains(err.Error(), tt.want) {
				t.Errorf("Handle(%q) = %v, want a usage error saying %q", tt.line, err, tt.want)
			}
			if strings.Contains(fmt.Sprint(err), "unknown command") {
				t.Errorf("Handle(%q) = %v, want no %q", tt.line, err, "unknown command")
			}
		})
	}
	if ops := w.operations(); len(ops) != 0 {
		t.Errorf("journal = %+v, want nothing", ops)
	}
}
