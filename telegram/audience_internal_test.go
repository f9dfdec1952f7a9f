package telegram

import (
	"testing"

	"github.com/go-telegram/bot/models"
)

// A card names the kind of chat a send reaches in words an approver reads.
func TestChatKind(t *testing.T) {
	t.Parallel()
	for in, want := range map[models.ChatType]string{
		models.ChatTypePrivate: "a private chat", models.ChatTypeGroup: "a group",
		models.ChatTypeSupergroup: "a supergroup", models.ChatTypeChannel: "a channel", "forum": "a chat of type forum",
	} {
		if got := chatKind(in); got != want {
			t.Errorf("chatKind(%q) = %q, want %q", in, got, want)
		}
	}
}
