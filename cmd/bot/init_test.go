package main

import (
	"bytes"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/countersign/countersign"
	"github.com/countersign/countersign/policy"
	"github.com/countersign/countersign/telegram/telegramtest"
)

// countersign init, end to end against the fake Bot API over HTTP: it writes the default
// policy (never over one that exists), makes the data folder 0700, checks the
// token with getMe (its shape first: a malformed one makes no request), prints
// the next command, and never prints the token, in any spelling.
func TestBotInit(t *testing.T) {
	const custom = "# my own policy\ntools:\n  prepare_reply:\n    side_effect: none\n"
	tests := []struct {
		name     string
		token    string
		api      string // "" the fake Bot API; "closed" one that refuses connections
		args     []string
		existing string // the policy file's text before, "" for none
		openData bool   // the data folder exists, 0755
		code     int
		say      []string // in stdout and stderr
		getMe    int      // calls the fake server saw
		operator int64    // the written policy's operator, 0 for none
	}{
		{name: "a fresh folder", token: childToken, code: exitOK, getMe: 1,
			say: []string{"policy: wrote ", "data folder: made ", "the bot is @", "  countersign run -data ", "send /start to @", "  countersign pair -data ", "<that code>"}},
		{name: "with -user", token: childToken, args: []string{"-user", "111"}, code: exitOK, getMe: 1, operator: 111,
			say: []string{"policy: wrote ", "the bot is @", "  countersign run -data ", "send /help"}},
		{name: "a token in quotes with a CR", token: `"` + childToken + `"` + "\r", code: exitOK, getMe: 1, say: []string{"the bot is @"}},
		{name: "a policy that exists", token: childToken, existing: custom, args: []string{"-user", "111"}, code: exitOK, getMe: 1,
			say: []string{"policy: kept ", "-user is not written into it: add 111"}},
		{name: "an open data folder", token: childToken, openData: true, code: exitOK, getMe: 1,
			say: []string{"data folder: kept ", "is open to other users (0755)", "chmod 700 "}},
		{name: "no token", token: "", code: exitError,
			say: []string{"policy: wrote ", "token: not checked", "countersign init: TELEGRAM_BOT_TOKEN is not set", "run countersign init again"}},
		{name: "a malformed token", token: "123456:ABC-DEF", code: exitError,
			say: []string{"TELEGRAM_BOT_TOKEN: the secret after the ':' is 7 characters", "a token is <bot id>:<secret>"}},
		// The fake answers another token's call 401 without recording it.
		{name: "a token Telegram rejects", token: "7001234567:AAHdqTcvCH1vGWJxfSeofSAs0K5PALDsXX", code: exitError,
			say: []string{"countersign init: token: Telegram rejected the bot token (401 Unauthorized)"}},
		{name: "Telegram unreachable", token: childToken, api: "closed", code: exitError,
			say: []string{"countersign init: token: the Bot API cannot be reached at http://127.0.0.1:", "check the network"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			srv := telegramtest.NewServer(t, telegramtest.Options{Token: childToken})
			api := srv.URL()
			if tt.api == "closed" {
				api = closedAPI(t)
			}
			root := t.TempDir()
			data, pol := filepath.Join(root, "data"), filepath.Join(root, "conf", "policies.yaml")
			if tt.existing != "" {
				os.MkdirAll(filepath.Dir(pol), 0o700)
				os.WriteFile(pol, []byte(tt.existing), 0o600)
			}
			if tt.openData {
				os.Mkdir(data, 0o755)
				os.Chmod(data, 0o755) // whatever the umask
			}
			env := map[string]string{"TELEGRAM_BOT_TOKEN": tt.token, "TELEGRAM_API_URL": api}
			r := runMain(t, "", env, append([]string{"init", "-data", data, "-policies", pol}, tt.args...)...)
			got := r.stdout + r.stderr
			if r.code != tt.code {
				t.Errorf("exit %d, want %d\n%s", r.code, tt.code, got)
			}
			for _, s := range tt.say {
				if !strings.Contains(got, s) {
					t.Errorf("output lacks %q:\n%s", s, got)
				}
			}
			if n := len(srv.CallsTo("getMe")); n != tt.getMe {
				t.Errorf("getMe calls = %d, want %d", n, tt.getMe)
			}
			for _, form := range tokenForms(tt.token) {
				if strings.TrimSpace(form) != "" && strings.Contains(got, form) {
					t.Errorf("the output holds the token as %q:\n%s", form, got)
				}
			}
			text, err := os.ReadFile(pol)
			if err != nil {
				t.Fatalf("policy file: %v", err)
			}
			switch {
			case tt.existing != "":
				if string(text) != tt.existing {
					t.Errorf("the existing policy was changed:\n%s", text)
				}
			case tt.operator == 0 && !bytes.Equal(text, countersign.DefaultPolicy):
				t.Errorf("the written policy is not the default one:\n%s", text)
			}
			if tt.existing == "" {
				p, err := policy.Load(pol)
				if err != nil {
					t.Fatalf("the written policy does not load: %v", err)
				}
				if want := tt.operator; (want == 0) != (len(p.Access.Operators) == 0) || want != 0 && (!p.Access.IsOperator(policy.UserID(want)) || !p.Access.IsApprover(policy.UserID(want))) {
					t.Errorf("access = %+v, want %d as operator and approver", p.Access, want)
				}
			}
			fi, err := os.Stat(data)
			if err != nil || !fi.IsDir() {
				t.Fatalf("data folder: %v", err)
			}
			if want := os.FileMode(0o700); !tt.openData && fi.Mode().Perm() != want {
				t.Errorf("data folder mode %04o, want %04o", fi.Mode().Perm(), want)
			}
		})
	}
}
