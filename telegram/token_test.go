package telegram_test

import (
	"context"
	"errors"
	"path/filepath"
	"strings"
	"testing"

	"github.com/countersign/countersign/journal"
	"github.com/countersign/countersign/telegram"
	"github.com/countersign/countersign/telegram/telegramtest"
)

// New takes the token out of the spaces, CR and quotes an env file leaves around
// it, and refuses one of the wrong shape before any request carries it in a URL,
// with an error that names the problem and holds no part of the token.
func TestNewTakesTheTokenOutOfItsPaddingAndRefusesAMalformedOne(t *testing.T) {
	t.Parallel()
	_, key, _ := strings.Cut(token, ":")
	tests := []struct {
		name, token string
		problem     string // "" for a token New accepts
	}{
		{"clean", token, ""},
		{"CR", token + "\r", ""},
		{"CRLF and spaces", "  " + token + "\r\n", ""},
		{"double quotes", `"` + token + `"`, ""},
		{"single quotes and a CR", `'` + token + `'` + "\r", ""},
		{"a quote that does not close", token + `"`, "a quote"},
		{"a percent escape", strings.Replace(token, "H", "%2F", 1), `'%'`},
		{"a tab inside", strings.Replace(token, "H", "\t", 1), "a space or a control character"},
		{"no colon", strings.Replace(token, ":", "", 1), "no ':'"},
		{"two colons", token + ":x", "more than one ':'"},
		{"a name for an id", "mybot:" + key, "not a number"},
		{"a short secret", "123:abcdefghij", "10 characters"},
		{"empty", " \r\n", "empty"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			srv := telegramtest.NewServer(t, telegramtest.Options{Token: token})
			j, err := journal.Open(context.Background(), filepath.Join(t.TempDir(), "journal.db"))
			if err != nil {
				t.Fatal(err)
			}
			defer j.Close()
			tg, err := telegram.New(context.Background(), j, telegram.Options{Token: tt.token, APIURL: srv.URL()})
			if tt.problem == "" {
				if err != nil {
					t.Fatalf("New: %v, want the bot", err)
				}
				if got, want := tg.Me().ID, srv.Bot().ID; got != want {
					t.Errorf("getMe answered bot %d, want %d", got, want)
				}
				return
			}
			var te *telegram.TokenError
			if !errors.As(err, &te) || !strings.Contains(te.Problem, tt.problem) {
				t.Fatalf("New: %v, want a TokenError saying %q", err, tt.problem)
			}
			if n := srv.Connections(); n != 0 {
				t.Errorf("a malformed token was sent over %d connections, want none", n)
			}
			for _, part := range []string{"abcdefghij", key[:20], key[len(key)-10:]} {
				if strings.Contains(err.Error(), part) {
					t.Errorf("the error %q holds part of the token", err)
				}
			}
		})
	}
}
