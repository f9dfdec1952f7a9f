package skips_test

import (
	"testing"

	"github.com/countersign/countersign/internal/skips"
)

func TestNeeded(t *testing.T) {
	tests := []struct{ line, want string }{
		{skips.Need("PostgreSQL (COUNTERSIGN_TEST_POSTGRES)", "cannot be reached: dial tcp: refused"), "PostgreSQL (COUNTERSIGN_TEST_POSTGRES)"},
		{"    pgtest.go:56: " + skips.Need("PostgreSQL", "down") + "\n", "PostgreSQL"},
		{"    clitest.go:76: needs the Codex CLI (COUNTERSIGN_CODEX): not found", "the Codex CLI (COUNTERSIGN_CODEX)"},
		{"    main_test.go:12: starts child processes", ""},
		{"    main_test.go:12: this test needs PostgreSQL: later", ""},
		{"needs nothing said", ""},
		{"", ""},
	}
	for _, tt := range tests {
		if got := skips.Needed(tt.line); got != tt.want {
			t.Errorf("Needed(%q) = %q, want %q", tt.line, got, tt.want)
		}
	}
}

// skipper records what Long asked to skip with.
type skipper struct{ said []any }

func (s *skipper) Skip(args ...any) { s.said = args }

func TestLongSkipsUnlessTheSwitchIsOn(t *testing.T) {
	for _, tt := range []struct {
		env  string
		skip bool
	}{{"", true}, {"0", true}, {"1", false}} {
		t.Setenv(skips.LongEnv, tt.env)
		var s skipper
		skips.Long(&s, "runs for a minute")
		if got := s.said != nil; got != tt.skip {
			t.Errorf("%s=%q: skipped %v, want %v", skips.LongEnv, tt.env, got, tt.skip)
		}
		if tt.skip && (len(s.said) != 1 || skips.Needed(s.said[0].(string)) != skips.LongSuites) {
			t.Errorf("%s=%q: skipped with %v, want a need of %s", skips.LongEnv, tt.env, s.said, skips.LongSuites)
		}
	}
}
