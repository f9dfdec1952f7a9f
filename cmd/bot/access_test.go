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
// BOT_APPROVERS) starts, says so in two warnings, and then does nothing for anyone:
// a command gets the stranger's refusal, a tap is refused, and no card or message
// goes out.
func TestAPolicyThatGrantsNothingWarnsAndDoesNothing(t *testing.T) {
	srv := telegramtest.NewServer(t, telegramtest.Options{Token: childToken})
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	var log syncBuffer
	env := map[string]string{"TELEGRAM_BOT_TOKEN": childToken, "TELEGRAM_API_URL": srv.URL(), "COUNTERSIGN_POLL_TIMEOUT": "1s"}
	done := make(chan int, 1)
	go func() {
		done <- Main(ctx, []string{"run", "-data", t.TempDir(), "-policies", "../../policies.yaml"},
			Env{Stdin: strings.NewReader(""), Stdout: &log, Stderr: &log, Getenv: func(k string) string { return env[k] }})
	}()
	if err := srv.WaitTimeout(20*time.Second, func(s *telegramtest.Server) bool { return s.Polling() }); err != nil {
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
		t.Fatalf("bot run did not stop after its context ended\n%s", log.String())
	}
	for _, want := range []string{"no operators", "no approvers"} {
		if !strings.Contains(log.String(), want) {
			t.Errorf("start-up log lacks the warning %q:\n%s", want, log.String())
		}
	}
	if got := srv.Messages(user); len(got) != 1 || !strings.Contains(got[0].Text, "only answers its operators") {
		t.Errorf("the user got %+v, want one refusal", got)
	}
	if a := srv.CallbackAnswers()[0]; !strings.Contains(a.Text, "not known") {
		t.Errorf("the tap was answered %q, want it refused", a.Text)
	}
	if n := len(srv.CallsTo("sendMessage")); n != 1 {
		t.Errorf("sendMessage calls = %d, want only the refusal", n)
	}
}
