package main

import (
	"context"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/countersign/countersign/journal"
	"github.com/countersign/countersign/telegram/telegramtest"
)

// runChild runs "countersign args..." to its end in a child process, with stdin as its
// input, and returns its exit code and output.
func runChild(t *testing.T, env []string, stdin string, args ...string) (int, string) {
	t.Helper()
	cmd := exec.Command(os.Args[0], append([]string{"-test.run=^$", "--"}, args...)...)
	cmd.Env = append(childEnv("BOT_OPERATORS=100", "BOT_APPROVERS=100"), env...)
	cmd.Stdin = strings.NewReader(stdin)
	out, err := cmd.CombinedOutput()
	var exit *exec.ExitError
	switch {
	case errors.As(err, &exit):
		return exit.ExitCode(), string(out)
	case err != nil:
		t.Fatalf("bot %v: %v", args, err)
	}
	return 0, string(out)
}

// The commands that may run beside a running bot change nothing they should not:
// a console started while the bot waits to retry a send does not send it; countersign ops
// list and countersign vault resolve during a send in flight leave it in flight; a second
// countersign run on the same data is refused with a clear message. The bot's own send
// then lands, once, along the path it took.
func TestCommandsBesideARunningBotChangeNothing(t *testing.T) {
	t.Parallel()
	if testing.Short() {
		t.Skip("starts child processes")
	}
	srv := telegramtest.NewServer(t, telegramtest.Options{Token: childToken})
	srv.Inject(telegramtest.TooManyRequests(3).For("sendMessage").InChat(222))
	srv.Inject(telegramtest.Delay(3 * time.Second).For("sendMessage").InChat(222).OnCall(2))
	data, logs, wait := childData(t, srv)
	bot := startBot(t, srv, data)
	wait("the first poll", func(s *telegramtest.Server) bool { return s.Polling() })
	srv.PushMessage(100, 100, "/send 222 held while others look")
	card := approveCard(srv, wait)
	opID := strings.Fields(card.Text[strings.Index(card.Text, "Operation: "):])[1]

	reader, err := journal.Open(context.Background(), filepath.Join(data, "journal.db"))
	if err != nil {
		t.Fatal(err)
	}
	defer reader.Close()
	waitState := func(want journal.State, attempts int) {
		t.Helper()
		deadline := time.Now().Add(20 * time.Second)
		for {
			op, err := reader.Operation(context.Background(), opID)
			if err == nil && op.State == want && op.Attempts == attempts {
				return
			}
			if time.Now().After(deadline) {
				t.Fatalf("waiting for %s to be %s after %d attempts: it is %s after %d (%v)\nbot log:\n%s", opID, want, attempts, op.State, op.Attempts, err, logs())
			}
			time.Sleep(20 * time.Millisecond) // polling a file another process writes
		}
	}

	// The bot waits 3 s to retry (Telegram said 429): a console now must not send.
	waitState(journal.RetryWait, 1)
	code, out := runChild(t, nil, "/pending\n", "console", "-data", data, "-policies", "../../policies.yaml")
	if code != 0 || strings.Contains(out, "→ sent to") || !strings.Contains(out, opID+" retry_wait") {
		t.Errorf("console beside the bot: exit %d, want 0, the operation listed and nothing sent:\n%s", code, out)
	}

	// The retry is on the wire, held 3 s by Telegram: look, resolve, start a second bot.
	waitState(journal.Committing, 2)
	if code, out := runChild(t, nil, "", "ops", "list", "-data", data); code != 0 || !strings.Contains(out, opID+" committing") {
		t.Errorf("ops list during the send: exit %d, want 0 and the operation committing:\n%s", code, out)
	}
	if code, out := runChild(t, nil, "", "vault", "resolve", "-data", data, "-policies", "../../policies.yaml", opID, "delivered"); code != 1 || !strings.Contains(out, "no unknown outcome") {
		t.Errorf("vault resolve during the send: exit %d, want 1 and a refusal:\n%s", code, out)
	}
	code, out = runChild(t, []string{"TELEGRAM_BOT_TOKEN=" + childToken, "TELEGRAM_API_URL=" + srv.URL()}, "", "run", "-data", data, "-policies", "../../policies.yaml")
	if code != 1 || !strings.Contains(out, "already sends telegram operations") {
		t.Errorf("a second countersign run: exit %d, want 1 and a clear refusal:\n%s", code, out)
	}

	wait("the delivery", func(s *telegramtest.Server) bool { return len(s.Messages(222)) == 1 })
	waitState(journal.Committed, 2)
	bot.Process.Signal(syscall.SIGTERM)
	if err := bot.Wait(); err != nil {
		t.Errorf("bot after SIGTERM: %v\n%s", err, logs())
	}
	if n := len(srv.Messages(222)); n != 1 {
		t.Errorf("deliveries = %d, want 1", n)
	}
	ts, err := reader.Transitions(context.Background(), opID)
	if err != nil {
		t.Fatal(err)
	}
	var path []journal.State
	for _, tr := range ts {
		path = append(path, tr.To)
		if tr.Reason == journal.ReasonCrashRecovery {
			t.Errorf("a live commit was taken for a dead one: %+v", tr)
		}
	}
	want := []journal.State{journal.Prepared, journal.Verified, journal.AwaitingApproval, journal.Approved,
		journal.Committing, journal.RetryWait, journal.Committing, journal.Committed}
	if !slices.Equal(path, want) {
		t.Errorf("path = %v, want %v", path, want)
	}
}

// A bot a test starts has the journal of the data folder the test gives it,
// whatever the shell running the tests says: a journal URL, a token or
// operators in the environment do not reach the child.
func TestAChildBotKeepsToItsOwnDataFolderWhateverTheShellSays(t *testing.T) {
	t.Setenv("COUNTERSIGN_DATABASE_URL", "postgres://postgres@127.0.0.1:1/elsewhere")
	t.Setenv("TELEGRAM_BOT_TOKEN", "1:not-the-tests")
	data := t.TempDir()
	unknownIn(t, data)
	code, out := runChild(t, nil, "", "ops", "list", "-data", data)
	if code != exitOK || !strings.Contains(out, "unknown") || strings.Contains(out, "elsewhere") {
		t.Errorf("countersign ops list on the test's data folder = %d\n%s", code, out)
	}
}
