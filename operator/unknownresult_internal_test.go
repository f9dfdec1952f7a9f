package operator

import (
	"strings"
	"testing"

	"github.com/countersign/countersign/journal"
	"github.com/countersign/countersign/tools"
)

// An unknown outcome tells the person what to look for in the terms of what
// was asked: a message, a part, each item of an album, an action on a message
// already sent, or an HTTP call's effect; never "the message" for what sent none.
func TestAnUnknownSaysWhatToLookFor(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name string
		p    tools.Payload
		want string
	}{
		{"a message", tools.Payload{Action: tools.ActionSendMessage, Target: "222", Text: "hi"}, "look for the message in chat 222"},
		{"a part", tools.Payload{Action: tools.ActionSendMessage, Target: "222", Parts: []string{"a", "b"}}, "look for part 1 in chat 222"},
		{"an album", tools.Payload{Action: tools.ActionSendAlbum, Target: "222", Files: make([]tools.File, 3)}, "look for each of the 3 items in chat 222"},
		{"an edit", tools.Payload{Action: tools.ActionEditMessage, Target: "222", MessageID: 7, Text: "new"}, "check message 7 in chat 222 for the edit_message"},
		{"a forward", tools.Payload{Action: tools.ActionForwardMessage, Target: "222", From: "333", MessageID: 7}, "look for the message in chat 222"},
		{"an HTTP call", tools.Payload{Action: tools.ActionHTTPRequest, Target: "api.example", Request: &tools.HTTPRequest{}}, "check at api.example whether the http_request took effect"},
	}
	for _, tt := range tests {
		r := unknownResult(journal.Operation{ID: "op-x", Payload: tt.p}, "timeout")
		if !strings.Contains(r.Reason, tt.want) || !strings.Contains(r.Reason, "/resolve op-x delivered|not_delivered") {
			t.Errorf("%s: %q, want %q", tt.name, r.Reason, tt.want)
		}
	}
}
