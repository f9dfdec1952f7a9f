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
