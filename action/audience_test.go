package action_test

import (
	"testing"

	"github.com/countersign/countersign/action"
)

// A card names the kind of chat a send reaches in words an approver reads.
func TestAudienceInWords(t *testing.T) {
	t.Parallel()
	for in, want := range map[string]string{
		"private": "a private chat", "group": "a group", "supergroup": "a supergroup", "channel": "a channel", "forum": "a chat of type forum",
	} {
		if got := action.ChatKind(in); got != want {
			t.Errorf("ChatKind(%q) = %q, want %q", in, got, want)
		}
	}
	if got := (action.Audience{Name: "Team", Username: "team", Type: "supergroup"}).String(); got != `"Team @team", a supergroup` {
		t.Errorf("String = %q", got)
	}
}

// The audience is part of the payload's hash when it is known, and leaves the
// hash of a payload made without one as it was.
func TestAudienceIsHashed(t *testing.T) {
	t.Parallel()
	p := action.Payload{Action: action.SendMessage, Target: "222", Text: "hi"}
	bare := p.SHA256()
	p.Audience = &action.Audience{Name: "Team", Type: "group"}
	named := p.SHA256()
	p.Audience = &action.Audience{Name: "Team", Type: "supergroup"}
	if bare == named || named == p.SHA256() {
		t.Errorf("hashes %s, %s, %s: want the audience to change it", bare, named, p.SHA256())
	}
}
