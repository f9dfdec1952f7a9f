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
	// ModelShare is the share of the sends made as plain text, for a model turn
	// (0: commands only, and no model configured).
	ModelShare float64
	// FullDisk mounts the data folder on a small tmpfs and fills it at times
	// (root only; without mount the run says so and goes on without).
	FullDisk bool
	// MCPShare is the share of the sends made by outside agents over MCP: half
	// through `bot mcp` over stdio beside the bot, half over HTTP to its
	// -mcp-listen (0: no MCP callers, and no -mcp-listen).
	MCPShare float64
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
	cfg       Config
	rnd       *rand.Rand
	srv       *telegramtest.Server
	dir       string // data folder
	log       *os.File
	out       io.Writer
	bot       *exec.Cmd
	policies  string // the run's policy file
	exit      chan error
	count     map[string]int // actions and faults, by name
	model     *model         // nil: no model configured
	disk      *disk          // nil: no full disk in the mix
	agents    *agents        // nil: no MCP callers
	fullUntil time.Time      // when the filled disk is freed

	mu       sync.Mutex
	commands []command // every operator command pushed, in order
	nextMsg  int
}

// command is one /send the operator typed: its text is unique in the run.
type command struct {
	msgID  int
	target int64
	text   string
	model  bool // plain text for a model turn, not /send
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
	if cfg.FullDisk {
		d, err := mountDisk(w.dir)
		if err != nil {
			fmt.Fprintf(out, "chaos: no full disk in this run: %v\n", err)
		} else {
			w.disk = d
			defer d.unmount()
		}
	}
	if cfg.ModelShare > 0 {
		w.model = newModel(cfg.Seed)
		defer w.model.close()
	}
	policies, err := w.writePolicy(root)
	if err != nil {
		return nil, err
	}
	w.policies = policies
	if cfg.MCPShare > 0 {
		if w.agents, err = newAgents(ctx, w, root); err != nil {
			return nil, err
		}
	}
	if w.log, err = os.Create(filepath.Join(root, "bot.log")); err != nil {
		return nil, err
	}
	defer w.log.Close()
	w.srv = telegramtest.New(telegramtest.Options{Token: token})
	defer w.srv.Close()
	fmt.Fprintf(out, "chaos: seed %d, %d sends over %d chats (%.0f%% by model turns, %.0f%% by MCP callers), %d kills, full disk %v, faults for %s\n",
		cfg.Seed, cfg.Ops, cfg.Chats, 100*cfg.ModelShare, 100*cfg.MCPShare, cfg.Kills, w.disk != nil, cfg.Duration)
	began := time.Now()
	if err := w.start(policies); err != nil {
		return nil, err
	}
	w.storm(ctx, policies)
	w.windDown(ctx, policies)
	if w.agents != nil {
		w.agents.finish() // their last look, while the bot still runs
	}
	if err := w.stop(); err != nil {
		fmt.Fprintf(out, "chaos: the bot's last stop: %v\n", err)
	}
	if w.disk != nil {
		w.disk.free() // the checks below open the journal, as a person would
	}
	rep := w.check()
	if w.model != nil {
		for k, v := range w.model.counts() {
			rep.Actions[k] += v
		}
		rep.ModelRequests = len(w.model.srv.Requests())
	}
	if a := w.agents; a != nil {
		for k, v := range a.count {
			rep.Actions[k] += v
		}
		rep.MCPCalls, rep.MCPCommits, rep.MCPReconnects = a.callsN, a.commits, a.count["mcp: reconnect (http)"]+a.count["mcp: reconnect (stdio)"]
	}
	rep.Elapsed, rep.FullDisk = time.Since(began), w.disk != nil
	if logs, err := os.ReadFile(w.log.Name()); err == nil {
		// How often the full disk bit: writes SQLite or the vault were refused.
		rep.Actions["bot log: a write refused by the full disk"] = strings.Count(string(logs), "disk is full") +
			strings.Count(string(logs), "no space left on device")
	}
	rep.Print(out)
	logs, _ := os.ReadFile(w.log.Name())
	kept := filepath.Join(os.TempDir(), fmt.Sprintf("countersign-chaos-%d.log", cfg.Seed))
	os.WriteFile(kept, logs, 0o600)
	if !rep.OK() {
		// The data folder goes with the log, to read the journal of what broke.
		data := filepath.Join(os.TempDir(), fmt.Sprintf("countersign-chaos-%d-data", cfg.Seed))
		os.RemoveAll(data)
		if out, err := exec.Command("cp", "-a", w.dir, data).CombinedOutput(); err != nil {
			fmt.Fprintf(w.out, "chaos: keep the data folder: %v %s\n", err, out)
		}
		fmt.Fprintf(out, "--- bot log (last 4000 bytes; all of it in %s; the data folder in %s) ---\n%s\n", kept, data, tail(logs, 4000))
	} else {
		fmt.Fprintf(out, "the bot's log: %s\n", kept)
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
	// A stall is dropped after 2 s instead of 45, so that stalls fit in the run.
	p = strings.Replace(p, "stall_warning: 10s", "stall_warning: 1s", 1)
	p = strings.Replace(p, "stall_abort: 45s", "stall_abort: 2s", 1)
	if !strings.Contains(p, "approval_ttl: 40s") || !strings.Contains(p, "chats: [") {
		return "", fmt.Errorf("%s: approval_ttl or auto_approve not in the expected form", w.cfg.Policies)
	}
	path := filepath.Join(dir, "policies.yaml")
	return path, os.WriteFile(path, []byte(p), 0o600)
}

// start runs "bot run" and waits until it polls.
func (w *world) start(policies string) error {
	args := []string{"run", "-data", w.dir, "-policies", policies}
	if w.agents != nil {
		args = append(args, "-mcp-listen", w.agents.addr)
	}
	w.bot = exec.Command(w.cfg.Bot, args...)
	w.bot.Env = append(os.Environ(), "TELEGRAM_BOT_TOKEN="+token, "TELEGRAM_API_URL="+w.srv.URL(),
		"COUNTERSIGN_POLL_TIMEOUT=1s", fmt.Sprintf("BOT_OPERATORS=%d", operator),
		fmt.Sprintf("BOT_APPROVERS=%d,%d", operator, approver))
	if w.agents != nil {
		w.bot.Env = append(w.bot.Env, "COUNTERSIGN_MCP_TOKEN="+mcpToken)
	}
	if w.model != nil {
		w.bot.Env = append(w.bot.Env, "ANTHROPIC_API_KEY="+modelKey, "ANTHROPIC_BASE_URL="+w.model.srv.URL)
	}
	w.bot.Stdout, w.bot.Stderr = w.log, w.log
	if err := w.bot.Start(); err != nil {
		return fmt.Errorf("start the bot: %w", err)
	}
	w.exit = make(chan error, 1)
	go func(c *exec.Cmd, exit chan error) { exit <- c.Wait() }(w.bot, w.exit)
	if w.model != nil {
		w.model.restarted()
	}
	polls := len(w.srv.CallsTo("getUpdates"))
	err := w.srv.WaitTimeout(60*time.Second, func(s *telegramtest.Server) bool { return len(s.CallsTo("getUpdates")) > polls })
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
func (w *world) sendCommand(target int64, text string, model bool) command {
	w.mu.Lock()
	w.nextMsg++
	c := command{msgID: w.nextMsg, target: target, text: text, model: model}
	w.commands = append(w.commands, c)
	w.mu.Unlock()
	w.push(c)
	return c
}

// push delivers the update that carries c (again, when it was pushed before).
func (w *world) push(c command) {
	msg := map[string]any{
		"message_id": c.msgID, "date": time.Now().Unix(), "text": fmt.Sprintf("/send %d %s", c.target, c.text),
		"from":     map[string]any{"id": operator, "is_bot": false, "first_name": "Olga"},
		"chat":     map[string]any{"id": operator, "type": "private", "first_name": "Olga"},
		"entities": []map[string]any{{"type": "bot_command", "offset": 0, "length": 5}},
	}
	if c.model {
		msg["text"] = ask(c.target, c.text)
		delete(msg, "entities")
	}
	w.srv.PushUpdate(map[string]any{"message": msg})
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
