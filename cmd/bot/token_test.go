package main

import (
	"context"
	"net"
	"net/url"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/countersign/countersign/telegram/telegramtest"
)

// closedAPI is the URL of a Bot API that refuses every connection: the errors
// of the HTTP client, which quote the request's URL, reach the output.
func closedAPI(t *testing.T) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := ln.Addr().String()
	ln.Close()
	return "http://" + addr
}

// tokenForms are the ways a token can be spelled in text: as given, trimmed,
// escaped for a URL path or query, quoted as Go and JSON quote it, and its
// secret half alone.
func tokenForms(tok string) []string {
	forms := []string{tok, url.PathEscape(tok), url.QueryEscape(tok), strings.Trim(strconv.Quote(tok), `"`)}
	if _, half, ok := strings.Cut(tok, ":"); ok {
		half = strings.Trim(half, " \t\r\n\"'")
		forms = append(forms, half, url.PathEscape(half), url.QueryEscape(half))
	}
	return forms
}

// countersign run reads TELEGRAM_BOT_TOKEN as a .env file or a shell may hand it over:
// padded with a CR or a space, or in quotes. It uses the token inside those and
// refuses one of the wrong shape with a message that says what is wrong with it;
// and no form of the token, not even its secret half, is ever printed.
func TestBotRunNeverPrintsItsToken(t *testing.T) {
	const secretHalf = "AAHdqTcvCH1vGWJxfSeofSAs0K5PALDsaw"
	tests := []struct {
		name   string
		token  string
		closed bool // the Bot API refuses connections, instead of the fake answering
		code   int
		say    string // in stderr
	}{
		{"a CR from a CRLF .env file", childToken + "\r", false, exitOK, "countersign started"},
		{"a trailing space", childToken + " ", true, exitError, "connection refused"},
		{"a trailing space, Telegram answering", childToken + " ", false, exitOK, "countersign started"},
		{"double quotes", `"` + childToken + `"`, true, exitError, "connection refused"},
		{"single quotes, Telegram answering", `'` + childToken + `'`, false, exitOK, "countersign started"},
		{"a clean token, Telegram unreachable", childToken, true, exitError, "connection refused"},
		{"a short secret with a CR", "123:abcdefghij\r", true, exitError, "TELEGRAM_BOT_TOKEN: the secret after the ':' is 10 characters"},
		{"a short secret with a space", "123:abcdefghij ", true, exitError, "TELEGRAM_BOT_TOKEN: the secret after the ':' is 10 characters"},
		{"a short secret in quotes", `"123:abcdefghij"`, true, exitError, "TELEGRAM_BOT_TOKEN: the secret after the ':' is 10 characters"},
		{"one quote only", `"` + childToken, true, exitError, "TELEGRAM_BOT_TOKEN: it has a quote"},
		{"%-escaped characters", "7001234567:AAHdqTcvCH1vGWJxf%2FeofSAs0K5PALDsa", true, exitError, `TELEGRAM_BOT_TOKEN: it has '%'`},
		{"a slash", "7001234567:AAHdqTcvCH1vGWJxf/eofSAs0K5PALDsaw", true, exitError, `TELEGRAM_BOT_TOKEN: it has '/'`},
		{"a space inside", "7001234567:AAHdqTcvCH1vGWJx eofSAs0K5PALDsaw", true, exitError, "TELEGRAM_BOT_TOKEN: it has a space"},
		{"no colon", "7001234567" + secretHalf, true, exitError, "TELEGRAM_BOT_TOKEN: it has no ':'"},
		{"an id that is not a number", "bot7001234567:" + secretHalf, true, exitError, "TELEGRAM_BOT_TOKEN: the bot id before the ':' is not a number"},
		{"only spaces", "  \r\n", true, exitError, "TELEGRAM_BOT_TOKEN is not set"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			srv := telegramtest.NewServer(t, telegramtest.Options{Token: childToken})
			api := srv.URL()
			if tt.closed {
				api = closedAPI(t)
			}
			env := map[string]string{"TELEGRAM_BOT_TOKEN": tt.token, "TELEGRAM_API_URL": api,
				"BOT_OPERATORS": "100", "BOT_APPROVERS": "100"}
			ctx, cancel := context.WithCancel(context.Background())
			defer cancel()
			var out, errOut syncBuffer
			done := make(chan int, 1)
			go func() {
				done <- Main(ctx, []string{"run", "-data", t.TempDir(), "-policies", "../../policies.yaml", "-poll-timeout", "1s"},
					Env{Stdin: strings.NewReader(""), Stdout: &out, Stderr: &errOut, Getenv: func(k string) string { return env[k] }})
			}()
			if !tt.closed {
				started := make(chan struct{})
				go func() {
					srv.WaitTimeout(childWait, func(s *telegramtest.Server) bool { return s.Polling() })
					close(started)
				}()
				select {
				case <-started: // polling with the token inside the padding
				case <-done:
					t.Fatalf("countersign run stopped before polling:\n%s", errOut.String())
				}
				cancel()
			}
			var code int
			select {
			case code = <-done:
			case <-time.After(20 * time.Second):
				t.Fatalf("countersign run did not stop\n%s", errOut.String())
			}
			got := out.String() + errOut.String()
			if code != tt.code {
				t.Errorf("exit %d, want %d\n%s", code, tt.code, got)
			}
			if !strings.Contains(errOut.String(), tt.say) {
				t.Errorf("stderr lacks %q:\n%s", tt.say, errOut.String())
			}
			for _, form := range tokenForms(tt.token) {
				if strings.TrimSpace(form) != "" && strings.Contains(got, form) {
					t.Errorf("the output holds the token as %q:\n%s", form, got)
				}
			}
		})
	}
}
