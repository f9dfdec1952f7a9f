package journal_test

import (
	"context"
	"testing"
	"time"
)

// A chat's session is kept per provider, replaced by a new one, forgotten by "",
// and still there after the journal is opened again.
func TestSessionsPerChatAndProvider(t *testing.T) {
	t.Parallel()
	forEachBackend(t, testSessionsPerChatAndProvider)
}

func testSessionsPerChatAndProvider(t *testing.T, name string) {
	ctx := context.Background()
	path := name
	j := open(t, path, time.Now)
	steps := []struct{ provider, chat, set string }{
		{"claude-code", "42", "s1"},
		{"codex", "42", "t1"},
		{"claude-code", "42", "s2"},
		{"claude-code", "7", "s3"},
		{"claude-code", "7", ""},
	}
	for _, s := range steps {
		if err := j.SetSession(ctx, s.provider, s.chat, s.set); err != nil {
			t.Fatal(err)
		}
	}
	j.Close()
	j = open(t, path, time.Now)
	for _, tt := range []struct{ provider, chat, want string }{
		{"claude-code", "42", "s2"}, {"codex", "42", "t1"}, {"claude-code", "7", ""}, {"codex", "7", ""},
	} {
		if got, err := j.Session(ctx, tt.provider, tt.chat); err != nil || got != tt.want {
			t.Errorf("Session(%s, %s) = %q, %v; want %q", tt.provider, tt.chat, got, err, tt.want)
		}
	}
}
