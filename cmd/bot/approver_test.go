package main

import (
	"context"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/pquerna/otp"

	"github.com/countersign/countersign/stepup"
	"github.com/countersign/countersign/telegram/telegramtest"
)

var otpauthURI = regexp.MustCompile(`otpauth://totp/\S+`)

// enrolled runs `countersign approver totp` for user in data and returns the
// key it printed, read from the otpauth URI as an app reads it.
func enrolled(t *testing.T, data, user string, flags ...string) (secret string, r result) {
	t.Helper()
	r = runMain(t, "", nil, append(append([]string{"approver", "totp", "-data", data}, flags...), user)...)
	if r.code != 0 {
		t.Fatalf("approver totp = %d, %q, %q", r.code, r.stdout, r.stderr)
	}
	k, err := otp.NewKeyFromURL(otpauthURI.FindString(r.stdout))
	if err != nil {
		t.Fatalf("no otpauth URI in %q: %v", r.stdout, err)
	}
	return k.Secret(), r
}

// countersign approver totp enrols on the machine: it prints the QR code, the
// otpauth URI and the key once; a second enrolment is refused unless it
// replaces the first; list shows who is enrolled and never a key; -remove
// removes. The key is in no file of the data folder but the journal.
func TestApproverTOTPEnrolsOnTheMachine(t *testing.T) {
	data := t.TempDir()
	secret, r := enrolled(t, data, "42")
	for _, want := range []string{"TOTP second factor enrolled for user 42", "█", "otpauth://totp/Countersign:42?", "Or type the key by hand (time-based, 6 digits, 30 seconds): " + secret, "This is the only time the key is shown"} {
		if !strings.Contains(r.stdout, want) {
			t.Errorf("output lacks %q:\n%s", want, r.stdout)
		}
	}
	ctx := context.Background()
	j, err := openJournal(ctx, Config{DataDir: data})
	if err != nil {
		t.Fatal(err)
	}
	code, _ := stepup.Code(secret, time.Now())
	if err := j.UseTOTP(ctx, 42, code); err != nil {
		t.Fatalf("the printed key's code = %v, want it taken", err)
	}
	j.Close()
	if again := runMain(t, "", nil, "approver", "totp", "-data", data, "42"); again.code != 1 || !strings.Contains(again.stderr, "user 42 has a TOTP factor already: -replace") {
		t.Errorf("a second enrolment = %d, %q", again.code, again.stderr)
	}
	fresh, _ := enrolled(t, data, "42", "-replace")
	if fresh == secret {
		t.Error("-replace kept the key")
	}
	enrolled(t, data, "43")
	list := runMain(t, "", nil, "approver", "list", "-data", data)
	if list.code != 0 || !regexp.MustCompile(`(?m)^42\s+totp\s+\d{4}-\d\d-\d\d \d\d:\d\d UTC\s+never\s+ready$`).MatchString(list.stdout) || !strings.Contains(list.stdout, "\n43 ") {
		t.Errorf("list = %d, %q", list.code, list.stdout)
	}
	if strings.Contains(list.stdout, fresh) || strings.Contains(list.stdout, secret) {
		t.Error("list printed a key")
	}
	if rm := runMain(t, "", nil, "approver", "totp", "-data", data, "-remove", "42"); rm.code != 0 || !strings.Contains(rm.stdout, "user 42 is removed") {
		t.Errorf("-remove = %d, %q, %q", rm.code, rm.stdout, rm.stderr)
	}
	if rm := runMain(t, "", nil, "approver", "totp", "-data", data, "-remove", "42"); rm.code != 1 || !strings.Contains(rm.stderr, "user 42 has no TOTP factor") {
		t.Errorf("-remove again = %d, %q", rm.code, rm.stderr)
	}
	for _, bad := range [][]string{{"approver", "totp", "-data", data, "ann"}, {"approver", "totp", "-data", data, "-replace", "-remove", "43"}, {"approver"}, {"approver", "totp", "-data", data}} {
		if r := runMain(t, "", nil, bad...); r.code != exitUsage {
			t.Errorf("%q = %d, %q; want a usage error", bad, r.code, r.stderr)
		}
	}
	filepath.WalkDir(data, func(path string, d os.DirEntry, err error) error {
		if err != nil || d.IsDir() || strings.HasPrefix(filepath.Base(path), "journal.db") {
			return nil
		}
		if b, _ := os.ReadFile(path); strings.Contains(string(b), fresh) {
			t.Errorf("%s holds the key", path)
		}
		return nil
	})
}

// The binary end to end: an approver enrolled with `countersign approver
// totp` taps Approve on a card of a tool that asks a code, gets the prompt,
// replies with the code from the printed key, and the message leaves once.
func TestTheBotAsksTheCodeOfAnApproverEnrolledOnTheMachine(t *testing.T) {
	if testing.Short() {
		t.Skip("starts child processes")
	}
	srv := telegramtest.NewServer(t, telegramtest.Options{Token: childToken})
	data, _, wait := childData(t, srv)
	secret, _ := enrolled(t, data, "100")
	src, err := os.ReadFile("../../policies.yaml")
	if err != nil {
		t.Fatal(err)
	}
	pol := filepath.Join(t.TempDir(), "policies.yaml")
	stepped := strings.Replace(string(src), "  commit_send_message:\n    side_effect: committed\n    approval: required\n",
		"  commit_send_message:\n    side_effect: committed\n    approval: required\n    step_up: totp\n", 1)
	if stepped == string(src) || os.WriteFile(pol, []byte(stepped), 0o600) != nil {
		t.Fatal("could not write the policy with step_up")
	}
	startBotWith(t, srv, data, nil, "-policies", pol)
	srv.PushMessage(100, 100, "/send 222 with a code")
	card := approveCard(srv, wait)
	if !strings.Contains(card.Text, "Second factor: TOTP") {
		t.Errorf("card = %q", card.Text)
	}
	var prompt telegramtest.Message
	wait("the code prompt", func(s *telegramtest.Server) bool {
		for _, m := range s.Messages(100) {
			if strings.HasPrefix(m.Text, "🔐 Approval ") {
				prompt = m
			}
		}
		return prompt.MessageID != 0
	})
	if n := len(srv.Messages(222)); n != 0 {
		t.Fatalf("sent %d on a tap alone", n)
	}
	code, _ := stepup.Code(secret, time.Now())
	srv.PushReply(100, 100, prompt.MessageID, code)
	wait("the delivery", func(s *telegramtest.Server) bool { return len(s.Messages(222)) == 1 })
	wait("the card closed", func(s *telegramtest.Server) bool {
		m, _ := s.Message(100, card.MessageID)
		return strings.Contains(m.Text, "✅ Approved by")
	})
	if n := len(srv.Messages(222)); n != 1 {
		t.Errorf("sent %d, want 1", n)
	}
}
