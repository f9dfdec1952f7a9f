package main

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"os/signal"
	"path/filepath"
	"slices"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/countersign/countersign/journal"
	"github.com/countersign/countersign/telegram/telegramtest"
)

// TestMain lets a test start this very binary as "bot ..." in a child process:
// the child runs Main with the arguments after "--".
func TestMain(m *testing.M) {
	if os.Getenv("COUNTERSIGN_CHILD") == "1" {
		for i, a := range os.Args {
			if a == "--" {
				ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
				code := Main(ctx, os.Args[i+1:], Env{Stdin: os.Stdin, Stdout: os.Stdout, Stderr: os.Stderr, Getenv: os.Getenv})
				stop()
				os.Exit(code)
			}
		}
		os.Exit(2)
	}
	os.Exit(m.Run())
}

// childEnv is the environment of a child bot: the test process's own without
// any of the bot's settings (a journal URL, a token, operators, a model's key
// in the shell must not reach a bot a test starts on its own data folder),
// then COUNTERSIGN_CHILD=1 and what the test sets.
func childEnv(set ...string) []string {
	env := slices.DeleteFunc(os.Environ(), func(kv string) bool {
		name, _, _ := strings.Cut(kv, "=")
		return botSetting(name)
	})
	return append(append(env, "COUNTERSIGN_CHILD=1"), set...)
}

// botSetting says whether the variable name is one the bot or its brains read.
func botSetting(name string) bool {
	for _, prefix := range []string{"COUNTERSIGN_", "BOT_", "TELEGRAM_", "ANTHROPIC_", "OPENAI_"} {
		if strings.HasPrefix(name, prefix) {
			return true
		}
	}
	return false
}

const childToken = "7001234567:AAHdqTcvCH1vGWJxfSeofSAs0K5PALDsaw"

// childWait bounds a wait on a child bot (and the agent CLI it runs): a
// deadline for a failure on a loaded machine, where a CLI's start alone can
// take seconds, never a wait a passing test sits through.
const childWait = time.Minute

// startBot runs "countersign run" in a child process against srv, logging to a file.
func startBot(t *testing.T, srv *telegramtest.Server, data string) *exec.Cmd {
	t.Helper()
	return startBotWith(t, srv, data, nil)
}

// startBotWith is startBot with more environment and flags.
func startBotWith(t testing.TB, srv *telegramtest.Server, data string, env []string, flags ...string) *exec.Cmd {
	t.Helper()
	cmd := exec.Command(os.Args[0], append([]string{"-test.run=^$", "--", "run", "-data", data, "-policies", "../../policies.yaml", "-poll-timeout", "1s"}, flags...)...)
	cmd.Env = append(childEnv("TELEGRAM_BOT_TOKEN="+childToken, "TELEGRAM_API_URL="+srv.URL(),
		"BOT_OPERATORS=100", "BOT_APPROVERS=100"), env...)
	log, err := os.OpenFile(filepath.Join(data, "..", "bot.log"), os.O_CREATE|os.O_APPEND|os.O_WRONLY, 0o600)
	if err != nil {
		t.Fatal(err)
	}
	cmd.Stdout, cmd.Stderr = log, log
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		cmd.Process.Kill()
		cmd.Wait()
		log.Close()
	})
	return cmd
}

// childData makes a data folder for bots run as child processes against srv
// (startBot logs beside it), and returns it with the bot's log as it stands and
// a wait on srv that fails with that log.
func childData(t testing.TB, srv *telegramtest.Server) (data string, logs func() string, wait func(string, func(*telegramtest.Server) bool)) {
	root := t.TempDir()
	data = filepath.Join(root, "data")
	os.MkdirAll(data, 0o700)
	logs = func() string { b, _ := os.ReadFile(filepath.Join(root, "bot.log")); return string(b) }
	wait = func(what string, cond func(*telegramtest.Server) bool) {
		t.Helper()
		if err := srv.WaitTimeout(childWait, cond); err != nil {
			var said strings.Builder
			for _, m := range srv.Messages(100) {
				fmt.Fprintf(&said, "  %q\n", m.Text)
			}
			t.Fatalf("waiting for %s: %v\nchat 100 was told:\n%sbot log:\n%s", what, err, said.String(), logs())
		}
	}
	return data, logs, wait
}

// approveCard waits for the approval card in user 100's chat and taps Approve on it.
func approveCard(srv *telegramtest.Server, wait func(string, func(*telegramtest.Server) bool)) telegramtest.Message {
	var card telegramtest.Message
	wait("the approval card", func(s *telegramtest.Server) bool {
		for _, m := range s.Messages(100) {
			if strings.Contains(string(m.ReplyMarkup), "ap1:") {
				card = m
			}
		}
		return card.MessageID != 0
	})
	data := strings.Split(string(card.ReplyMarkup), `"callback_data":"`)[1]
	srv.PushCallbackQuery(100, 100, card.MessageID, data[:strings.Index(data, `"`)])
	return card
}

func TestKilledMidSendNeverResends(t *testing.T) {
	if testing.Short() {
		t.Skip("starts child processes")
	}
	srv := telegramtest.NewServer(t, telegramtest.Options{Token: childToken})
	srv.Inject(telegramtest.AcceptThenHang().For("sendMessage").InChat(222))
	root := t.TempDir()
	data := filepath.Join(root, "data")
	os.MkdirAll(data, 0o700)
	wait := func(what string, cond func(*telegramtest.Server) bool) {
		t.Helper()
		if err := srv.WaitTimeout(childWait, cond); err != nil {
			logs, _ := os.ReadFile(filepath.Join(root, "bot.log"))
			t.Fatalf("waiting for %s: %v\nbot log:\n%s", what, err, logs)
		}
	}
	first := startBot(t, srv, data)
	wait("the first poll", func(s *telegramtest.Server) bool { return s.Polling() })
	srv.PushMessage(100, 100, "/send 222 sent while the process dies")
	approveCard(srv, wait)
	wait("Telegram to accept the message", func(s *telegramtest.Server) bool { return len(s.Messages(222)) == 1 })

	first.Process.Kill() // SIGKILL while the response hangs: no code of ours runs
	first.Wait()

	second := startBot(t, srv, data)
	wait("the unknown-outcome notice after the restart", func(s *telegramtest.Server) bool {
		for _, m := range s.Messages(100) {
			if strings.Contains(string(m.ReplyMarkup), "rs1:") {
				return true
			}
		}
		return false
	})
	second.Process.Signal(syscall.SIGTERM)
	if err := second.Wait(); err != nil {
		logs, _ := os.ReadFile(filepath.Join(root, "bot.log"))
		t.Errorf("second process after SIGTERM: %v\n%s", err, logs)
	}
	if n := len(srv.Messages(222)); n != 1 {
		t.Errorf("deliveries = %d, want exactly 1", n)
	}
	assertRecovered(t, filepath.Join(data, "journal.db"))
}

// assertRecovered checks the journal took the crash_recovery path to unknown.
func assertRecovered(t *testing.T, path string) {
	t.Helper()
	ctx := context.Background()
	j, err := journal.Open(ctx, path)
	if err != nil {
		t.Fatal(err)
	}
	defer j.Close()
	ops, err := j.Operations(ctx, journal.Filter{})
	if err != nil || len(ops) != 1 {
		t.Fatalf("operations = %v, %v; want one", ops, err)
	}
	ts, _ := j.Transitions(ctx, ops[0].ID)
	last := ts[len(ts)-1]
	if ops[0].State != journal.Unknown || last.From != journal.Committing || last.Reason != journal.ReasonCrashRecovery {
		t.Errorf("state %s, last transition %+v; want unknown by crash_recovery", ops[0].State, last)
	}
}

// Whoever tails the service's log sees what happened: the approval decided
// (the operation, the decision, who), the commit's outcome, and the stop, in
// that order, and never a word of the message.
func TestTheLogSaysWhatHappened(t *testing.T) {
	if testing.Short() {
		t.Skip("starts child processes")
	}
	srv := telegramtest.NewServer(t, telegramtest.Options{Token: childToken})
	data, logs, wait := childData(t, srv)
	bot := startBot(t, srv, data)
	wait("the first poll", func(s *telegramtest.Server) bool { return s.Polling() })
	const text = "Quarterly numbers are in"
	srv.PushMessage(100, 100, "/send 222 "+text)
	approveCard(srv, wait)
	wait("the delivery", func(s *telegramtest.Server) bool { return len(s.Messages(222)) == 1 })
	bot.Process.Signal(syscall.SIGTERM)
	if err := bot.Wait(); err != nil {
		t.Fatalf("bot after SIGTERM: %v\n%s", err, logs())
	}
	log := logs()
	// The stop may come before the outcome's line (the delivery seen, the
	// answer's record under way), never before the decision, nor after "stopped".
	for _, order := range [][]string{
		{`msg="approval decided"`, `decision=approved by=100`, `msg=outcome`, `status=succeeded side_effect=committed`, `msg=stopped`},
		{`msg="approval decided"`, `msg="stopping: the sends under way finish and are journaled first"`, `msg=stopped`},
	} {
		at := -1
		for _, want := range order {
			i := strings.Index(log, want)
			if i < at {
				t.Errorf("the log lacks %q after %q:\n%s", want, order[0], log)
				break
			}
			at = i
		}
	}
	if strings.Contains(log, text) {
		t.Errorf("the log holds the message's text:\n%s", log)
	}
}
