package command_test

import (
	"strings"
	"testing"
	"time"

	"github.com/countersign/countersign/command"
	"github.com/countersign/countersign/journal"
)

// TestTheGrantReplySaysWhatItCovers: the granter is told the one tool and the
// one chat, that any text from any task passes without a card, and that
// forwards and copies are not covered.
func TestTheGrantReplySaysWhatItCovers(t *testing.T) {
	g := journal.Grant{ID: "gr-1", Kind: journal.GrantWindow, Tool: "commit_send_message", Target: "-1001234567890",
		Until: time.Date(2026, 12, 5, 1, 0, 0, 0, time.UTC)}
	text := command.GrantText(g)
	for _, want := range []string{"every commit_send_message to -1001234567890", "2026-12-05 01:00 UTC", "whatever it says",
		"whichever task asks", "no other tool and no other chat", "forwards and copies are never granted", "/revoke gr-1"} {
		if !strings.Contains(text, want) {
			t.Errorf("grant reply %q does not say %q", text, want)
		}
	}
}
