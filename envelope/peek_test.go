package envelope_test

import (
	"testing"

	"github.com/countersign/countersign/envelope"
)

func TestPeek(t *testing.T) {
	tests := []struct {
		name, key string
		note      []byte
		want      string
		ok        bool
	}{
		{"status", "status", golden(t, "x", "x"), "unknown", true},
		{"quoted target", "target", golden(t, "x", "x"), "222", true},
		{"expires", "expires", golden(t, "x", "x"), "2026-12-07T09:15:02Z", true},
		{"single quotes", "resolved_by", golden(t, "attempts: 1\n", "attempts: 1\nresolved_by: '@it''s'\n"), "@it's", true},
		{"comment after value", "status", golden(t, "status: unknown", "status: committed # by hand"), "committed", true},
		{"CRLF", "status", []byte("---\r\nstatus: committed\r\n---\r\n"), "committed", true},
		{"absent key", "resolution", golden(t, "x", "x"), "", false},
		{"null value", "status", golden(t, "status: unknown", "status: ~"), "", false},
		{"empty value", "status", golden(t, "status: unknown", "status:"), "", false},
		{"escape in value", "target", golden(t, `target: "222"`, `target: "2\x32"`), "", false},
		{"duplicate key", "status", golden(t, "attempts: 1\n", "attempts: 1\nstatus: committed\n"), "", false},
		{"indented line", "status", golden(t, "attempts: 1\n", "attempts: 1\n  x: y\n"), "", false},
		{"block scalar", "status", golden(t, "attempts: 1\n", "attempts: |\n  1\n"), "", false},
		{"key hidden in a quoted scalar", "status", golden(t, "status: unknown\n", "tool: \"x\nstatus: committed\n\"\n"), "", false},
		{"flow value", "status", golden(t, "status: unknown", "status: [committed]"), "", false},
		{"tab", "status", golden(t, "status: unknown", "status:\tcommitted"), "", false},
		{"unterminated", "status", golden(t, "---\n\n", "\n"), "", false},
		{"no front matter", "status", []byte("status: committed\n"), "", false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, ok := envelope.Peek(tt.note, tt.key)
			if got != tt.want || ok != tt.ok {
				t.Errorf("Peek(%q): got %q, %v; want %q, %v", tt.key, got, ok, tt.want, tt.ok)
			}
		})
	}
}
