package secret_test

import (
	"testing"

	"github.com/countersign/countersign/secret"
)

func TestRedact(t *testing.T) {
	tests := []struct {
		in, want string
		found    bool
	}{
		{"token 123456789:AAHdqTcvCH1vGWJxfSeofSAs0K5PALDsaw here", "token [secret withheld] here", true},
		{"key sk-ant-api03-abcdefghijklmnopqrstuvwx", "key [secret withheld]", true},
		{"AKIAIOSFODNN7EXAMPLE", "[secret withheld]", true},
		{"ghp_abcdefghijklmnopqrstuvwxyz0123", "[secret withheld]", true},
		{"chat -1001234567890 at 12:30", "chat -1001234567890 at 12:30", false},
		{"skip this sk-short", "skip this sk-short", false},
	}
	for _, tt := range tests {
		got, found := secret.Redact(tt.in)
		if got != tt.want || found != tt.found || secret.Contains(tt.in) != tt.found {
			t.Errorf("Redact(%q) = %q, %v; want %q, %v", tt.in, got, found, tt.want, tt.found)
		}
	}
}
