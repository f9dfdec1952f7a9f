//go:build unix

package main

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/countersign/countersign/telegram/telegramtest"
)

// A policy that grants nothing (no operators, no approvers, and no BOT_OPERATORS or
// BOT_APPROVERS) starts, says in one line, not a warning, that pairing is open,
// and then does nothing for anyone but offer a code: a command gets one, a tap
// is refused, and no card or other message goes out.
func TestAPolicyThatGrantsNothingOpensPairingAndDoesNothingElse(t *testing.T) {
	t.Parallel()
	srv := telegramtest.NewServer(t, telegramtest.Options{Token: childToken})
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	var log syncBuffer
	env := map[string]string{"TELEGRAM_BOT_TOKEN": childToken, "TELEGRAM_API_URL": srv.URL()}
	done := make(chan int, 1)
	go func() {
		done <- Main(ctx, []string{"run", "-data", t.TempDir(), "-policies", "../../policies.yaml", "-poll-timeout", "1s"},
			Env{Stdin: strings.NewReader(""), Stdout: &log, Stderr: &log, Getenv: func(k string) string { return env[k] }})
	}()
	if err := srv.WaitTimeout(childWait, func(s *telegramtest.Server) bool { return s.Polling() }); err != nil {
		t.Fatalf("the bot did not start polling: %v\n%s", err, log.String())
	}
	const user = 100
	srv.PushMessage(user, user, "/send 222 hello")
	srv.PushCallbackQuery(user, user, 1, "ap1:ap-000000:y")
	err := srv.WaitTimeout(10*time.Second, func(s *telegramtest.Server) bool {
		return len(s.Messages(user)) > 0 && len(s.CallbackAnswers()) > 0
	})
	if err != nil {
		t.Fatalf("the command and the tap were not answered: %v\n%s", err, log.String())
	}
	cancel()
	select {
	case <-done:
	case <-time.After(20 * time.Second):
		t.Fatalf("countersign run did not stop after its context ended\n%s", log.String())
	}
	if !strings.Contains(log.String(), "level=INFO msg=\"pairing open") {
		t.Errorf("start-up log does not say that pairing is open:\n%s", log.String())
	}
	for _, not := range []string{"no operators", "no approvers"} {
		if strings.Contains(log.String(), not) {
			t.Errorf("start-up log warns %q:\n%s", not, log.String())
		}
	}
	if got := srv.Messages(user); len(got) != 1 || !strings.Contains(got[0].Text, "countersign pair ") {
		t.Errorf("the user got %+v, want one pairing code", got)
	}
	if a := srv.CallbackAnswers()[0]; !strings.Contains(a.Text, "not known") {
		t.Errorf("the tap was answered %q, want it refused", a.Text)
	}
	if n := len(srv.CallsTo("sendMessage")); n != 1 {
		t.Errorf("sendMessage calls = %d, want only the code", n)
	}
}
