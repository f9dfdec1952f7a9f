package main

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"strings"
	"time"

	"github.com/countersign/countersign/journal"
	"github.com/countersign/countersign/telegram"
)

// runBot is "bot run": the Telegram bot. It ends with exit 1 and a plain message
// when Telegram rejects the token or another instance polls with it.
func runBot(ctx context.Context, args []string, env Env) int {
	var cfg Config
	fs := flags("run", env, &cfg)
	listen := fs.String("webhook-listen", "", "serve a webhook on this address (e.g. :8080) instead of long polling")
	hookURL := fs.String("webhook-url", "", "the public HTTPS URL Telegram calls for the webhook")
	certFile := fs.String("webhook-cert", "", "serve the webhook over HTTPS with this PEM certificate (a self-signed one is uploaded to Telegram)")
	keyFile := fs.String("webhook-key", "", "the PEM private key of -webhook-cert")
	mcpListen := fs.String("mcp-listen", "", "also serve the tools to outside agents over MCP (streamable HTTP) on this address, e.g. 127.0.0.1:8765; COUNTERSIGN_MCP_TOKEN is the bearer token, required off loopback")
	replica := fs.String("replica", env.Getenv("COUNTERSIGN_REPLICA"), "this process's name among replicas on one journal (default $COUNTERSIGN_REPLICA, else HOST-PID when the journal is on PostgreSQL); a SQLite journal has one sender unless this is set")
	lease := fs.Duration("lease", journal.DefaultLease, "among replicas: how long another replica waits, after this one stops renewing, before it takes over what this one held (a commit on the wire becomes unknown then)")
	if code := parse(fs, args); code >= 0 {
		return code
	}
	switch {
	case *lease < time.Second:
		fmt.Fprintln(env.Stderr, "bot run: -lease must be at least 1s (leases are renewed every second)")
		return exitUsage
	case (*listen == "") != (*hookURL == ""):
		fmt.Fprintln(env.Stderr, "bot run: -webhook-listen and -webhook-url go together")
		return exitUsage
	case (*certFile == "") != (*keyFile == ""):
		fmt.Fprintln(env.Stderr, "bot run: -webhook-cert and -webhook-key go together")
		return exitUsage
	case *certFile != "" && *listen == "":
		fmt.Fprintln(env.Stderr, "bot run: -webhook-cert needs -webhook-listen and -webhook-url")
		return exitUsage
	}
	hook := webhook(*listen, *hookURL, env)
	if hook != nil {
		hook.CertFile, hook.KeyFile = *certFile, *keyFile
	}
	name, err := replicaName(*replica, cfg)
	if err != nil {
		fmt.Fprintln(env.Stderr, "bot run:", err)
		return exitUsage
	}
	logger := newLogger(env.Stderr)
	if name != "" {
		logger = logger.With("replica", name) // every line says which replica wrote it
	}
	if err := serveTelegram(ctx, cfg, env, logger, hook, *mcpListen, replicaOf{name, *lease}); err != nil {
		logger.Error("stopped", "err", err)
		fmt.Fprintln(env.Stderr, "bot run:", err)
		return exitError
	}
	return exitOK
}

func webhook(listen, url string, env Env) *telegram.Webhook {
	if listen == "" {
		return nil
	}
	secret := env.Getenv("TELEGRAM_WEBHOOK_SECRET")
	if secret == "" {
		b := make([]byte, 24)
		rand.Read(b)
		secret = hex.EncodeToString(b)
	}
	return &telegram.Webhook{Listen: listen, URL: url, Secret: secret}
}

// replicaName is the name this process joins its journal's replicas under: the
// one given, or HOST-PID on PostgreSQL, where every bot run is a replica (one
// alone is a cluster of one); "" for a SQLite journal without a name, whose one
// process owns sending.
func replicaName(given string, cfg Config) (string, error) {
	if given != "" || !journal.IsPostgres(cfg.journalName()) {
		return given, nil
	}
	host, err := os.Hostname()
	if err != nil {
		return "", fmt.Errorf("name this replica with -replica: %w", err)
	}
	name := strings.Map(func(r rune) rune {
		if r == '.' || r == '_' || r == '-' || r >= '0' && r <= '9' || r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' {
			return r
		}
		return '-'
	}, host)
	return fmt.Sprintf("%.50s-%d", name, os.Getpid()), nil
}

// replicaOf is this process's place among replicas: its name ("" for the one
// owner of a SQLite journal) and lease.
type replicaOf struct {
	name  string
	lease time.Duration
}

func serveTelegram(ctx context.Context, cfg Config, env Env, logger *slog.Logger, hook *telegram.Webhook, mcpListen string, replica replicaOf) error {
	token := env.Getenv("TELEGRAM_BOT_TOKEN")
	if token == "" {
		return errors.New("TELEGRAM_BOT_TOKEN is not set (ask @BotFather for a token, or try bot console)")
	}
	p, err := loadPolicy(cfg, env)
	if err != nil {
		return err
	}
	if mcpListen != "" {
		if err := checkMCP(p, mcpListen, env); err != nil {
			return err // before Telegram is asked anything
		}
	}
	j, err := openJournal(ctx, cfg)
	if err != nil {
		return err
	}
	defer j.Close()
	if journal.IsPostgres(cfg.journalName()) {
		logger.Info("journal on PostgreSQL", "database", journal.Where(cfg.journalName())) // never the URL
	}
	if replica.name != "" {
		err = join(ctx, j, telegram.Transport, replica, logger)
	} else {
		err = own(ctx, j, telegram.Transport, logger)
	}
	if err != nil {
		return err
	}
	tg, err := telegram.New(ctx, j, telegram.Options{Token: token, APIURL: env.Getenv("TELEGRAM_API_URL"),
		PollTimeout: pollTimeout(env), Webhook: hook, Logger: logger})
	if err != nil {
		return err
	}
	a, err := newApp(cfg, j, p, edge{sender: tg.Sender(), transport: telegram.Transport}, env.Getenv, logger)
	if err != nil {
		return err
	}
	if err := useAgentCLI(ctx, cfg, a, env.Getenv, logger); err != nil {
		return err
	}
	if err := logStart(ctx, logger, tg, a, cfg); err != nil {
		return err
	}
	if mcpListen != "" {
		ctx, stop := context.WithCancel(ctx)
		defer stop() // the MCP server ends with the bot, however the bot ends
		if err := listenMCP(ctx, mcpListen, a, env, logger); err != nil {
			return err
		}
	}
	return tg.Serve(ctx, telegram.Deps{Operator: a.operator, Handler: a.handler, Policy: p})
}

// pollTimeout is the long-poll wait; COUNTERSIGN_POLL_TIMEOUT shortens it for tests
// against a local Bot API server.
func pollTimeout(env Env) time.Duration {
	d, err := time.ParseDuration(env.Getenv("COUNTERSIGN_POLL_TIMEOUT"))
	if err != nil || d <= 0 {
		return 0
	}
	return d
}

// logStart says who the bot is, under which policy, where its data is, and what is
// waiting for a person.
func logStart(ctx context.Context, logger *slog.Logger, tg *telegram.Bot, a *app, cfg Config) error {
	count := func(s journal.State) (int, error) {
		return a.journal.Count(ctx, journal.Filter{States: []journal.State{s}})
	}
	awaiting, err := count(journal.AwaitingApproval)
	if err != nil {
		return err
	}
	unknown, err := count(journal.Unknown)
	if err != nil {
		return err
	}
	logger.Info("countersign started", "bot", "@"+tg.Me().Username, "bot_id", tg.Me().ID,
		"policy", cfg.Policies, "tools", a.policy.ToolNames(), "operators", len(a.policy.Access.Operators),
		"approvers", len(a.policy.Access.Approvers), "data", cfg.DataDir,
		"awaiting_approval", awaiting, "awaiting_verification", unknown)
	warnOpenFolders(logger, cfg)
	if len(a.policy.Access.Operators) == 0 {
		logger.Warn("no operators: set access.operators or BOT_OPERATORS, or nobody can give commands")
	}
	if len(a.policy.Access.Approvers) == 0 {
		logger.Warn("no approvers: set access.approvers or BOT_APPROVERS, or every commit that needs a tap waits until it expires")
	}
	return nil
}
