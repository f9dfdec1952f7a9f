package main

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"io/fs"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/countersign/countersign/demo"
	"github.com/countersign/countersign/internal/httpserve"
	"github.com/countersign/countersign/stepup"
	"github.com/countersign/countersign/telegram/standin"
	"github.com/countersign/countersign/vault"
)

const demoUse = "countersign demo [-data DIR] [-listen 127.0.0.1:PORT]"

// The demo's cast: the person at the keyboard, who operates and approves, the
// chat the bot sends to, and the token the built-in Telegram accepts (of a
// real token's shape, and no real bot's).
const (
	demoYou        = 111
	demoTarget     = 222
	demoTargetName = "Alex"
	demoToken      = "1000000001:AAdemo-not-a-real-token-0000000000"
)

// runDemo is "countersign demo": the real bot, wired as countersign run wires it, against a
// Telegram of its own in this process (telegram/standin), so that a person sees
// the card flow without a token. The chat is drawn in this terminal, or with
// -listen on a local web page drawn like a phone. The data folder is a
// temporary one, removed at the end, unless -data names one.
func runDemo(ctx context.Context, args []string, env Env) int {
	var cfg Config
	fs := flag.NewFlagSet("countersign demo", flag.ContinueOnError)
	fs.SetOutput(env.Stderr)
	fs.StringVar(&cfg.DataDir, "data", "", "data folder for the demo's policy, journal, vault and log (default a temporary folder, removed at the end)")
	listen := fs.String("listen", "", "draw the chat on a web page served on this loopback address (e.g. 127.0.0.1:8090) instead of in this terminal")
	if code := parseArgs(fs, args, env, demoUse); code >= 0 {
		return code
	}
	addr, err := demoAddress(*listen)
	if err != nil {
		return usageError(env, demoUse, "countersign demo: -listen: %v", err)
	}
	if err := playDemo(ctx, cfg, addr, env); err != nil {
		fmt.Fprintln(env.Stderr, env.program()+" demo:", err)
		return exitError
	}
	return exitOK
}

// demoAddress is where the page is served: "" for none (the terminal), a
// loopback address otherwise, with no host meaning 127.0.0.1. The page has no
// login, so no other address is taken.
func demoAddress(listen string) (string, error) {
	if listen == "" {
		return "", nil
	}
	host, port, err := net.SplitHostPort(listen)
	if err != nil {
		return "", err
	}
	if host == "" {
		host = "127.0.0.1"
	}
	if ip := net.ParseIP(host); host != "localhost" && (ip == nil || !ip.IsLoopback()) {
		return "", fmt.Errorf("%s is not a loopback address: the demo's page has no login, so it is served to this machine only", host)
	}
	return net.JoinHostPort(host, port), nil
}

// playDemo runs one demo: the folder, the fake Telegram, the bot, and the view.
func playDemo(ctx context.Context, cfg Config, addr string, env Env) error {
	if cfg.DataDir == "" {
		dir, err := os.MkdirTemp("", "countersign-demo-")
		if err != nil {
			return fmt.Errorf("data folder: %w", err)
		}
		defer os.RemoveAll(dir)
		cfg.DataDir = dir
	} else if err := os.MkdirAll(cfg.DataDir, 0o700); err != nil {
		return fmt.Errorf("data folder: %w", err)
	}
	cfg.Policies = filepath.Join(cfg.DataDir, "policies.yaml")
	text, err := demoPolicy()
	if err != nil {
		return err
	}
	if _, err := writePolicyText(cfg.Policies, text); err != nil { // a folder used before keeps its policy
		return err
	}
	secret, err := enrolDemo(ctx, cfg)
	if err != nil {
		return err
	}
	logPath := filepath.Join(cfg.DataDir, "demo.log")
	logFile, err := os.OpenFile(logPath, os.O_WRONLY|os.O_CREATE|os.O_APPEND, 0o600)
	if err != nil {
		return fmt.Errorf("log: %w", err)
	}
	defer logFile.Close()
	v, err := vault.Open(cfg.vaultDir())
	if err != nil {
		return err
	}
	first, err := reserveDemoIDs(cfg.DataDir)
	if err != nil {
		return err
	}
	tg := standin.New(standin.Options{Token: demoToken, FirstUpdateID: first, FirstMessageID: int(first),
		Bot: standin.User{FirstName: "Countersign Demo", Username: "countersign_demo_bot"},
		Chats: []standin.Chat{{ID: demoYou, Type: "private", FirstName: "You"},
			{ID: demoTarget, Type: "private", FirstName: demoTargetName}}})
	defer tg.Close()
	scene := &demo.Scene{Server: tg, You: demoYou, Target: demoTarget, TargetName: demoTargetName, Vault: v, TOTP: secret}
	ctx, stop := context.WithCancel(ctx)
	defer stop()
	// The page listens before the bot starts: its cards' 🔎 Whole payload
	// opens the review page under the page's own address.
	var ln net.Listener
	rf := runFlags{token: demoToken, poll: 10 * time.Second, obs: observability{replica: "demo"}}
	if addr != "" {
		if ln, err = net.Listen("tcp", addr); err != nil {
			return fmt.Errorf("-listen: %w", err)
		}
		defer ln.Close()
		rf.reviewURL, rf.reviewMount = "http://"+ln.Addr().String(), scene.MountReview
	}
	served := make(chan error, 1)
	go func() { served <- demoBot(ctx, cfg, tg, logFile, rf) }()
	if err := demoReady(ctx, tg, served); err != nil {
		return err
	}
	fmt.Fprintf(env.Stdout, "Data folder: %s (the bot's log: %s)\n", cfg.DataDir, logPath)
	if addr == "" {
		err = scene.Terminal(ctx, env.Stdin, env.Stdout)
	} else {
		err = demoPage(ctx, scene, ln, env.Stdout, logFile)
	}
	stop()
	if berr := <-served; err == nil {
		err = berr
	}
	return err
}

// demoStepUp is what the demo's policy says of /publish (commit_publish_post):
// a tap and then a code, so that a new user sees the second factor.
const demoStepUp = "  commit_publish_post:\n    side_effect: committed\n    approval: required\n"

// demoPolicy is the default policy with the person as operator and approver,
// whose /publish asks a TOTP code beside the tap (step_up).
func demoPolicy() ([]byte, error) {
	text, err := policyFor(demoYou)
	if err != nil {
		return nil, err
	}
	if !bytes.Contains(text, []byte(demoStepUp)) {
		return nil, errors.New("policy: the default policy has no commit_publish_post entry to ask a code of")
	}
	return bytes.Replace(text, []byte(demoStepUp), []byte(demoStepUp+"    step_up: totp\n"), 1), nil
}

// enrolDemo enrols the person's TOTP factor afresh, as `countersign approver
// totp -replace` would, and returns its key: the demo shows the code an
// authenticator app would, beside the bot's question.
func enrolDemo(ctx context.Context, cfg Config) (string, error) {
	secret, err := stepup.NewSecret()
	if err != nil {
		return "", err
	}
	j, err := openJournal(ctx, cfg)
	if err != nil {
		return "", err
	}
	defer j.Close()
	if err := j.EnrolTOTP(ctx, demoYou, secret, true); err != nil {
		return "", err
	}
	return secret, nil
}

// demoBot is countersign run's bot on the fake Telegram: the same wiring, with the
// fake's address for the Bot API and a process environment of its own, so
// that nothing of the person's (a model's key, BOT_OPERATORS) changes what
// the demo shows.
func demoBot(ctx context.Context, cfg Config, tg *standin.Server, log io.Writer, rf runFlags) error {
	vars := map[string]string{"TELEGRAM_API_URL": tg.URL()}
	env := Env{Stdin: strings.NewReader(""), Stdout: log, Stderr: log, Getenv: func(k string) string { return vars[k] }}
	logger := newLogger(log).With("replica", "demo")
	return serveTelegram(ctx, cfg, env, logger, rf)
}

// demoReady waits until the bot asks the fake Telegram for updates, or ends
// before it does; an interrupt meanwhile is no error: the demo just ends.
func demoReady(ctx context.Context, tg *standin.Server, served <-chan error) error {
	polling := make(chan error, 1)
	wait, cancel := context.WithCancel(ctx)
	defer cancel()
	go func() { polling <- tg.WaitFor(wait, (*standin.Server).Polling) }()
	select {
	case err := <-polling:
		if ctx.Err() != nil {
			return nil // the view that follows ends at once
		}
		return err
	case err := <-served:
		if err == nil {
			err = errors.New("the bot stopped before it started")
		}
		return err
	}
}

// demoPage serves the demo's web page on ln until ctx ends.
func demoPage(ctx context.Context, scene *demo.Scene, ln net.Listener, out, log io.Writer) error {
	var err error
	srv := httpserve.Default.Server(scene.Handler(), newLogger(log))
	srv.BaseContext = func(net.Listener) context.Context { return ctx } // the page's waits end with the demo
	fmt.Fprintf(out, "Open http://%s/ in a browser: your chat with the bot, drawn like a phone. Ctrl-C ends the demo.\n", ln.Addr())
	served := make(chan error, 1)
	go func() { served <- srv.Serve(ln) }()
	select {
	case err = <-served:
	case <-ctx.Done():
		err = srv.Close()
		<-served
	}
	if errors.Is(err, http.ErrServerClosed) {
		err = nil
	}
	return err
}

// demoIDsFile, in the data folder, says where the next demo's Telegram numbers
// its updates, messages and taps from.
const demoIDsFile = "demo-ids.json"

// demoIDBlock is how many ids a demo run takes for itself.
const demoIDBlock = 1_000_000

// reserveDemoIDs takes the next block of ids for this run of the demo on dir
// and returns its first. The demo's Telegram lives in the process and starts
// afresh each run, but the journal in dir remembers what it was told: numbered
// from 1 again, a message typed in a second run would be taken for one the bot
// already had, and dropped. The block is written before it is used, so that a
// run that was killed never hands its ids to the next.
func reserveDemoIDs(dir string) (int64, error) {
	path := filepath.Join(dir, demoIDsFile)
	var ids struct {
		Next int64 `json:"next"`
	}
	switch b, err := os.ReadFile(path); {
	case errors.Is(err, fs.ErrNotExist):
		ids.Next = 1
	case err != nil:
		return 0, fmt.Errorf("demo: %w", err)
	default:
		if err := json.Unmarshal(b, &ids); err != nil || ids.Next < 1 {
			return 0, fmt.Errorf("demo: %s is not what the demo wrote (remove it to number from 1 again): %v", path, err)
		}
	}
	first := ids.Next
	ids.Next += demoIDBlock
	b, _ := json.Marshal(ids) // a number always marshals
	tmp := path + ".tmp"
	if err := os.WriteFile(tmp, b, 0o600); err != nil {
		return 0, fmt.Errorf("demo: %w", err)
	}
	if err := os.Rename(tmp, path); err != nil {
		return 0, fmt.Errorf("demo: %w", err)
	}
	return first, nil
}
