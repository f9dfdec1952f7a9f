package secret_test

import (
	"fmt"
	"log/slog"
	"net/url"
	"strings"
	"testing"

	"github.com/countersign/countersign/secret"
)

// A known secret is withheld in every spelling an error or a log line gives it:
// the URL a request failed on, quoted by the error, quoted again by the log.
func TestKnownIsWithheldInEverySpelling(t *testing.T) {
	const tok = "7001234567:AAHdqTcvCH1vGWJxfSeofSAs0K5PALDsaw"
	const half = "AAHdqTcvCH1vGWJxfSeofSAs0K5PALDsaw"
	logged := func(s string) string { // a quoted value in a log line
		var b strings.Builder
		slog.New(slog.NewTextHandler(&b, nil)).Info("x", "err", fmt.Errorf("parse %q: bad", s))
		return b.String()
	}
	tests := []struct{ name, given, text string }{
		{"raw", tok, "Post http://h/bot" + tok + "/getMe"},
		{"with a CR, Go-quoted", tok + "\r", fmt.Sprintf("parse %q", "http://h/bot"+tok+"\r/getMe")},
		{"with a CR, quoted twice", tok + "\r", logged("http://h/bot" + tok + "\r/getMe")},
		{"with a space, path-escaped", tok + " ", "Post http://h/bot" + url.PathEscape(tok+" ") + "/getMe"},
		{"in quotes, path-escaped", `"` + tok + `"`, "Post http://h/bot" + url.PathEscape(`"`+tok+`"`) + "/getMe"},
		{"query-escaped", tok, "?token=" + url.QueryEscape(tok)},
		{"JSON-escaped", tok + "\r", `{"token":"` + strings.ReplaceAll(tok, ":", `\u003a`) + `"}`},
		{"the secret half alone", tok, "key=" + half},
		{"the trimmed token, given padded", " " + tok + "\r\n", "bot" + tok + "/getMe"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := secret.NewKnown(tt.given).Redact(tt.text)
			if strings.Contains(got, half[:12]) || strings.Contains(got, half[len(half)-12:]) {
				t.Errorf("Redact(%q) = %q, still holds the token", tt.text, got)
			}
			if !strings.Contains(got, secret.Withheld) {
				t.Errorf("Redact(%q) = %q, want %q in its place", tt.text, got, secret.Withheld)
			}
		})
	}
	for _, given := range []string{"", "x", "1:ab"} { // too short to be told from words
		if got, want := secret.NewKnown(given).Redact("1:ab x y"), "1:ab x y"; got != want {
			t.Errorf("NewKnown(%q).Redact = %q, want %q", given, got, want)
		}
	}
}
