package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"math/rand/v2"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/countersign/countersign/telegram/telegramtest"
)

// Config is one chaos run.
type Config struct {
	Seed     int64
	Ops      int
	Kills    int
	Duration time.Duration
	Chats    int
	Bot      string // the bot binary; "" builds ./cmd/bot
	Policies string
	Verbose  bool
}

// The people and chats of a run.
const (
	operator  = 100 // operator and approver
	approver  = 101 // approver
	stranger  = 999
	firstChat = 2000 // targets that need a tap
	autoChat  = 3000 // targets an auto_approve rule covers
	autoChats = 3
	token     = "7001234567:AAHdqTcvCH1vGWJxfSeofSAs0K5PALDsaw"
)

// world is the fake Telegram, the bot process and what the run did to them.
type world struct {
	cfg      Config
	rnd      *rand.Rand
	srv      *telegramtest.Server
	dir      string // data folder
	log      *os.File
	out      io.Writer
	bot      *exec.Cmd
	policies string // the run's policy file
	exit     chan error
	count    map[string]int // actions and faults, by name

	mu       sync.Mutex
	commands []command // every operator command pushed, in order
	nextMsg  int
}

// command is one /send the operator typed: its text is unique in the run.
type command struct {
	msgID  int
	target int64
	text   string
}

// Run makes one chaos run and prints its report to out. The error is for a run
// that could not be set up; broken promises are in the report.
func Run(ctx context.Context, cfg Config, out io.Writer) (*Report, error) {
	if cfg.Chats < 1 || cfg.Ops < 1 {
		return nil, errors.New("-ops and -chats must be positive")
	}
	root, err := os.MkdirTemp("", "countersign-chaos-")
	if err != nil {
		return nil, err
	}
	defer os.RemoveAll(root)
	w := &world{cfg: cfg, rnd: rand.New(rand.NewPCG(uint64(cfg.Seed), 0x5eed)), dir: filepath.Join(root, "data"),
		out: out, count: map[string]int{}, nextMsg: 1_000_000}
	if w.cfg.Bot == "" {
		if w.cfg.Bot, err = build(root); err != nil {
			return nil, err
		}
	}
	if err := os.MkdirAll(w.dir, 0o700); err != nil {
		return nil, err
	}
	policies, err := w.writePolicy(root)
	if err != nil {
		return nil, err
	}
	w.policies = policies
	if w.log, err = os.Create(filepath.Join(root, "bot.log")); err != nil {
		return nil, err
	}
	defer w.log.Close()
	w.srv = telegramtest.New(telegramtest.Options{Token: token})
	defer w.srv.Close()
	fmt.Fprintf(out, "chaos: seed %d, %d sends over %d chats, %d kills, faults for %s\n", cfg.Seed, cfg.Ops, cfg.Chats, cfg.Kills, cfg.Duration)
	if err := w.start(policies); err != nil {
		return nil, err
	}
	w.storm(ctx, policies)
	w.windDown(ctx, policies)
	if err := w.stop(); err != nil {
		fmt.Fprintf(out, "chaos: the bot's last stop: %v\n", err)
	}
	rep := w.check()
	rep.Print(out)
	if !rep.OK() {
		logs, _ := os.ReadFile(w.log.Name())
		kept := filepath.Join(os.TempDir(), fmt.Sprintf("countersign-chaos-%d.log", cfg.Seed))
		os.WriteFile(kept, logs, 0o600)
		fmt.Fprintf(out, "--- bot log (last 4000 bytes; all of it in %s) ---\n%s\n", kept, tail(logs, 4000))
	}
	return rep, nil
}

// build compiles the bot into dir.
func build(dir string) (string, error) {
	bin := filepath.Join(dir, "bot")
	cmd := exec.Command("go", "build", "-o", bin, "github.com/countersign/countersign/cmd/bot")
	if out, err := cmd.CombinedOutput(); err != nil {
		return "", fmt.Errorf("build the bot: %v\n%s", err, out)
	}
	return bin, nil
}

// writePolicy is the starting policy with a short approval_ttl, so that approvals
// left alone expire within the run, and an auto_approve rule for a few chats.
func (w *world) writePolicy(dir string) (string, error) {
	src, err := os.ReadFile(w.cfg.Policies)
	if err != nil {
		return "", err
	}
	var chats []string
	for i := range autoChats {
		chats = append(chats, fmt.Sprintf("%q", fmt.Sprint(autoChat+i)))
	}
	p := string(src)
	p = strings.Replace(p, "approval_ttl: 24h", "approval_ttl: 40s", 1)
	p = strings.Replace(p, "auto_approve: []", "auto_approve:\n  - tool: commit_send_message\n    chats: ["+strings.Join(chats, ", ")+"]", 1)
	p = strings.Replace(p, "duplicate_window: 24h", "duplicate_window: 0s", 1)
	if !strings.Contains(p, "approval_ttl: 40s") || !strings.Contains(p, "chats: [") {
		return "", fmt.Errorf("%s: approval_ttl or auto_approve not in the expected form", w.cfg.Policies)
	}
	path := filepath.Join(dir, "policies.yaml")
	return path, os.WriteFile(path, []byte(p), 0o600)
}

// start runs "bot run" and waits until it polls.
func (w *world) start(policies string) error {
	w.bot = exec.Command(w.cfg.Bot, "run", "-data", w.dir, "-policies", policies)
	w.bot.Env = append(os.Environ(), "TELEGRAM_BOT_TOKEN="+token, "TELEGRAM_API_URL="+w.srv.URL(),
		"COUNTERSIGN_POLL_TIMEOUT=1s", fmt.Sprintf("BOT_OPERATORS=%d", operator),
		fmt.Sprintf("BOT_APPROVERS=%d,%d", operator, approver))
	w.bot.Stdout, w.bot.Stderr = w.log, w.log
	if err := w.bot.Start(); err != nil {
		return fmt.Errorf("start the bot: %w", err)
	}
	w.exit = make(chan error, 1)
	go func(c *exec.Cmd, exit chan error) { exit <- c.Wait() }(w.bot, w.exit)
	polls := len(w.srv.CallsTo("getUpdates"))
	err := w.srv.WaitTimeout(30*time.Second, func(s *telegramtest.Server) bool { return len(s.CallsTo("getUpdates")) > polls })
	if err != nil {
		return fmt.Errorf("the bot did not start polling: %w", err)
	}
	return nil
}

// kill ends the bot with SIGKILL: no code of its own runs.
func (w *world) kill() {
	w.bot.Process.Kill()
	<-w.exit
}

// stop ends the bot with SIGTERM and returns how it ended.
func (w *world) stop() error {
	w.bot.Process.Signal(syscall.SIGTERM)
	select {
	case err := <-w.exit:
		return err
	case <-time.After(60 * time.Second):
		w.bot.Process.Kill()
		return errors.New("did not stop within 60s of SIGTERM")
	}
}

// sendCommand pushes "/send target text" from the operator as a new message, and
// remembers it, so that a second delivery of the same message can be pushed.
func (w *world) sendCommand(target int64, text string) command {
	w.mu.Lock()
	w.nextMsg++
	c := command{msgID: w.nextMsg, target: target, text: text}
	w.commands = append(w.commands, c)
	w.mu.Unlock()
	w.push(c)
	return c
}

// push delivers the update that carries c (again, when it was pushed before).
func (w *world) push(c command) {
	line := fmt.Sprintf("/send %d %s", c.target, c.text)
	w.srv.PushUpdate(map[string]any{"message": map[string]any{
		"message_id": c.msgID, "date": time.Now().Unix(), "text": line,
		"from":     map[string]any{"id": operator, "is_bot": false, "first_name": "Olga"},
		"chat":     map[string]any{"id": operator, "type": "private", "first_name": "Olga"},
		"entities": []map[string]any{{"type": "bot_command", "offset": 0, "length": 5}},
	}})
}

func (w *world) note(action string) {
	w.count[action]++
	if w.cfg.Verbose {
		fmt.Fprintf(w.out, "  %s\n", action)
	}
}

func tail(b []byte, n int) []byte {
	if len(b) > n {
		return b[len(b)-n:]
	}
	return b
}
