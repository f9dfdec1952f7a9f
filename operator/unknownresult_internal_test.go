package operator

import (
	"strings"
	"testing"

	"github.com/countersign/countersign/action"
	"github.com/countersign/countersign/journal"
)

// An unknown outcome tells the person what to look for in the terms of what
// was asked: a message, a part, each item of an album, an action on a message
// already sent, or an HTTP call's effect; never "the message" for what sent none.
func TestAnUnknownSaysWhatToLookFor(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name string
		p    action.Payload
		want string
	}{
		{"a message", action.Payload{Action: action.SendMessage, Target: "222", Text: "hi"}, "look for the message in chat 222"},
		{"a part", action.Payload{Action: action.SendMessage, Target: "222", Parts: []string{"a", "b"}}, "look for part 1 in chat 222"},
		{"an album", action.Payload{Action: action.SendAlbum, Target: "222", Files: make([]action.File, 3)}, "look for each of the 3 items in chat 222"},
		{"an edit", action.Payload{Action: action.EditMessage, Target: "222", MessageID: 7, Text: "new"}, "check message 7 in chat 222 for the edit_message"},
		{"a forward", action.Payload{Action: action.ForwardMessage, Target: "222", From: "333", MessageID: 7}, "look for the message in chat 222"},
		{"an HTTP call", action.Payload{Action: action.HTTP, Target: "api.example", Request: &action.HTTPRequest{}}, "check at api.example whether the http_request took effect"},
	}
	for _, tt := range tests {
		r := unknownResult(journal.Operation{ID: "op-x", Payload: tt.p}, "timeout")
		if !strings.Contains(r.Reason, tt.want) || !strings.Contains(r.Reason, "/resolve op-x delivered|not_delivered") {
			t.Errorf("%s: %q, want %q", tt.name, r.Reason, tt.want)
		}
	}
}
