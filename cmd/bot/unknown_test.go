package main

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/countersign/countersign/telegram/telegramtest"
)

// A send whose answer was lost is an unknown outcome: countersign run logs it once, at
// error level, with the operation and what to do, so that it stands out from
// the warnings a running bot logs in passing.
func TestBotRunLogsAnUnknownOutcomeAsAnError(t *testing.T) {
	t.Parallel()
	srv := telegramtest.NewServer(t, telegramtest.Options{Token: childToken})
	srv.Inject(telegramtest.AcceptThenDrop().For("sendMessage").InChat(222))
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	var log syncBuffer
	env := map[string]string{"TELEGRAM_BOT_TOKEN": childToken, "TELEGRAM_API_URL": srv.URL(),
		"BOT_OPERATORS": "100", "BOT_APPROVERS": "100"}
	done := make(chan int, 1)
	go func() {
		done <- Main(ctx, []string{"run", "-data", t.TempDir(), "-policies", "../../policies.yaml", "-poll-timeout", "1s"},
			Env{Stdin: strings.NewReader(""), Stdout: &log, Stderr: &log, Getenv: func(k string) string { return env[k] }})
	}()
	wait := func(what string, cond func(*telegramtest.Server) bool) {
		t.Helper()
		if err := srv.WaitTimeout(childWait, cond); err != nil {
			t.Fatalf("waiting for %s: %v\n%s", what, err, log.String())
		}
	}
	wait("the first poll", func(s *telegramtest.Server) bool { return s.Polling() })
	srv.PushMessage(100, 100, "/send 222 accepted, its answer lost")
	approveCard(srv, wait)
	wait("the approver told to verify", func(s *telegramtest.Server) bool {
		for _, m := range s.Messages(100) {
			if strings.Contains(m.Text, "/resolve op-") {
				return true
			}
		}
		return false
	})
	cancel()
	select {
	case <-done: // the bot's work, and the events it published, have ended
	case <-time.After(20 * time.Second):
		t.Fatalf("countersign run did not stop\n%s", log.String())
	}
	const line = "outcome unknown: nothing is resent until someone verifies"
	var found []string
	for _, l := range strings.Split(log.String(), "\n") {
		if strings.Contains(l, line) {
			found = append(found, l)
		}
	}
	if len(found) != 1 || !strings.Contains(found[0], "level=ERROR") || !strings.Contains(found[0], "op=op-") || !strings.Contains(found[0], "target=222") {
		t.Errorf("log lines of the unknown outcome = %q, want one at level ERROR naming the operation and its target", found)
	}
}
