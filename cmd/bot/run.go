package main

import (
	"context"
	"crypto/hmac"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"strings"
	"time"

	"github.com/countersign/countersign/filestore"
	"github.com/countersign/countersign/journal"
	"github.com/countersign/countersign/pairing"
	"github.com/countersign/countersign/policy"
	"github.com/countersign/countersign/telegram"
)

// runBot is "countersign run": the Telegram bot. It ends with exit 1 and a plain message
// when Telegram rejects the token or another instance polls with it.
func runBot(ctx context.Context, args []string, env Env) int {
	var cfg Config
	fs := flags("run", env, &cfg)
	listen := fs.String("webhook-listen", "", "serve a webhook on this address (e.g. :8080) instead of long polling")
	hookURL := fs.String("webhook-url", "", "the public HTTPS URL Telegram calls for the webhook")
	certFile := fs.String("webhook-cert", "", "serve the webhook over HTTPS with this PEM certificate (a self-signed one is uploaded to Telegram)")
	keyFile := fs.String("webhook-key", "", "the PEM private key of -webhook-cert")
	mcpListen := fs.String("mcp-listen", "", "also serve the tools to outside agents over MCP (streamable HTTP) on this address, e.g. 127.0.0.1:8765; COUNTERSIGN_MCP_TOKEN is the bearer token, required off loopback")
	replica := fs.String("replica", env.Getenv("COUNTERSIGN_REPLICA"), "this process's name among replicas on one journal, on every log line and in countersign_replica_info (default $COUNTERSIGN_REPLICA, else HOST-PID when the journal is on PostgreSQL); a SQLite journal has one sender unless this is set")
	poll := fs.Duration("poll-timeout", telegram.DefaultPollTimeout, "how long one getUpdates long poll waits for an update; shorter when a proxy or NAT between the bot and Telegram drops idle connections sooner")
	lease := fs.Duration("lease", journal.DefaultLease, "among replicas: how long another replica waits, after this one stops renewing, before it takes over what this one held (a commit on the wire becomes unknown then)")
	reviewListen := fs.String("review-listen", "", "serve the review page (an approval's whole payload, opened from a card's 🔎 Whole payload button or a /review link) on this address, e.g. 127.0.0.1:8443; with -review-url")
	reviewURL := fs.String("review-url", "", "the public https address the review page is reached at (a TLS proxy in front of -review-listen), e.g. https://bot.example.com")
	logLevel := fs.String("log-level", "info", "the least level logged: debug, info, warn or error; debug adds a line a tap with the time each of its steps took (inbox, decision, checks, write-ahead, fence, rate limiter, Bot API)")
	var obs observability
	fs.StringVar(&obs.listen, "metrics-listen", "", "serve /healthz, /readyz and /metrics on this address, e.g. 127.0.0.1:9090, and /metrics no longer on the webhook's listener")
	if code := parseArgs(fs, args, env, "countersign run [-data DIR] [-policies FILE] [-webhook-listen ADDR -webhook-url URL] [flags]"); code >= 0 {
		return code
	}
	switch {
	case *poll < time.Second:
		fmt.Fprintln(env.Stderr, env.program()+" run: -poll-timeout must be at least 1s (Telegram counts it in whole seconds)")
		return exitUsage
	case *lease < time.Second:
		fmt.Fprintln(env.Stderr, env.program()+" run: -lease must be at least 1s (leases are renewed every second)")
		return exitUsage
	case parseLevel(*logLevel) == nil:
		fmt.Fprintln(env.Stderr, env.program()+" run: -log-level must be debug, info, warn or error")
		return exitUsage
	case (*listen == "") != (*hookURL == ""):
		fmt.Fprintln(env.Stderr, env.program()+" run: -webhook-listen and -webhook-url go together")
		return exitUsage
	case (*certFile == "") != (*keyFile == ""):
		fmt.Fprintln(env.Stderr, env.program()+" run: -webhook-cert and -webhook-key go together")
		return exitUsage
	case (*reviewListen == "") != (*reviewURL == ""):
		fmt.Fprintln(env.Stderr, env.program()+" run: -review-listen and -review-url go together")
		return exitUsage
	case *reviewURL != "" && checkReviewURL(*reviewURL) != nil:
		fmt.Fprintln(env.Stderr, env.program()+" run: -review-url:", checkReviewURL(*reviewURL))
		return exitUsage
	case *certFile != "" && *listen == "":
		fmt.Fprintln(env.Stderr, env.program()+" run: -webhook-cert needs -webhook-listen and -webhook-url")
		return exitUsage
	}
	token, err := botToken(env) // before anything else: every request and the webhook's secret use it
	if err != nil {
		fmt.Fprintln(env.Stderr, env.program()+" run:", err)
		return exitError
	}
	hook := webhook(*listen, *hookURL, token, env)
	if hook != nil {
		hook.CertFile, hook.KeyFile = *certFile, *keyFile
	}
	name, err := replicaName(*replica, cfg)
	if err != nil {
		fmt.Fprintln(env.Stderr, env.program()+" run:", err)
		return exitUsage
	}
	obs.replica = name
	if obs.replica == "" {
		obs.replica = hostPID() // a label only: the one owner of a SQLite journal
	}
	logger := newLoggerAt(env.Stderr, *parseLevel(*logLevel)).With("replica", obs.replica) // every line says which replica wrote it
	// The error that ends the bot is said once, as every other command says
	// its own: on stderr, after the command's name. A log line as well put the
	// same words twice on the same stream.
	if err := serveTelegram(ctx, cfg, env, logger, runFlags{token: token, hook: hook, poll: *poll, mcpListen: *mcpListen, replica: replicaOf{name, *lease}, obs: obs,
		reviewListen: *reviewListen, reviewURL: *reviewURL}); err != nil {
		fmt.Fprintln(env.Stderr, env.program()+" run:", err)
		return exitError
	}
	return exitOK
}

// botToken is TELEGRAM_BOT_TOKEN out of the spaces, CR or quotes an env file or a
// shell may leave around it, or an error that says what is wrong with it and
// never what it is.
func botToken(env Env) (string, error) {
	raw := env.Getenv("TELEGRAM_BOT_TOKEN")
	if strings.TrimSpace(raw) == "" {
		return "", errors.New(env.named("TELEGRAM_BOT_TOKEN is not set (ask @BotFather for a token, or try countersign console)"))
	}
	token, err := telegram.ParseToken(raw)
	if te := (*telegram.TokenError)(nil); errors.As(err, &te) {
		return "", fmt.Errorf("TELEGRAM_BOT_TOKEN: %s (%s)", te.Problem, telegram.TokenShape)
	}
	return token, err
}

func webhook(listen, url, token string, env Env) *telegram.Webhook {
	if listen == "" {
		return nil
	}
	secret := env.Getenv("TELEGRAM_WEBHOOK_SECRET")
	if secret == "" {
		secret = webhookSecret(token)
	}
	return &telegram.Webhook{Listen: listen, URL: url, Secret: secret}
}

// replicaName is the name this process joins its journal's replicas under: the
// one given, or HOST-PID on PostgreSQL, where every countersign run is a replica (one
// alone is a cluster of one); "" for a SQLite journal without a name, whose one
// process owns sending.
func replicaName(given string, cfg Config) (string, error) {
	if given != "" || !journal.IsPostgres(cfg.journalName()) {
		return given, nil
	}
	return hostPID(), nil
}

// replicaOf is this process's place among replicas: its name ("" for the one
// owner of a SQLite journal) and lease.
type replicaOf struct {
	name  string
	lease time.Duration
}

// webhookSecretLabel is what a derived webhook secret is the HMAC of.
const webhookSecretLabel = "countersign webhook secret"

// webhookSecret is the webhook's secret when TELEGRAM_WEBHOOK_SECRET sets none:
// the HMAC-SHA256 of a fixed label keyed by the bot token, in 48 hex digits.
// Every replica of one bot derives the same secret, so that whichever of them
// called setWebhook last, the header Telegram sends is accepted by all; the
// token cannot be read back from it.
func webhookSecret(token string) string {
	mac := hmac.New(sha256.New, []byte(token))
	mac.Write([]byte(webhookSecretLabel))
	return hex.EncodeToString(mac.Sum(nil))[:48]
}

// observability is where a countersign run process answers for its health and metrics.
type observability struct {
	listen  string // -metrics-listen: "" serves them on the webhook's listener only; else /metrics only here
	replica string
}

// runFlags is what countersign run is told beyond the data folder: how it
// reaches Telegram, who it is among replicas, where else it listens. A test
// (or the demo) sets them as fields, never through the environment.
type runFlags struct {
	token     string
	hook      *telegram.Webhook // nil: long polling
	poll      time.Duration     // the long poll's wait; 0 is Telegram's default
	mcpListen string
	replica   replicaOf
	obs       observability
	// reviewListen and reviewURL serve the review page ("" for none).
	reviewListen, reviewURL string
	// reviewMount, when set, is handed each round's review page to serve
	// under reviewURL instead of a listener of its own (the demo's page).
	reviewMount func(http.Handler)
}

func serveTelegram(ctx context.Context, cfg Config, env Env, logger *slog.Logger, rf runFlags) error {
	token, hook, mcpListen, replica, obs := rf.token, rf.hook, rf.mcpListen, rf.replica, rf.obs
	p, err := loadPolicy(cfg, env)
	if err != nil {
		return err
	}
	if mcpListen != "" {
		if err := checkMCP(p, cfg, mcpListen, env); err != nil {
			return err // before Telegram is asked anything
		}
	}
	if err := checkPasskeys(p, rf.reviewURL); err != nil {
		return err
	}
	j, err := openJournal(ctx, cfg)
	if err != nil {
		return err
	}
	abandoned := false // stuck on a database out of reach: closing it would wait as well
	defer func() {
		if !abandoned {
			j.Close()
		}
	}()
	if journal.IsPostgres(cfg.journalName()) {
		logger.Info("journal on PostgreSQL", "database", journal.Where(cfg.journalName())) // never the URL
	}
	m := newBotMetrics(j, obs.replica)
	routes := m.routes(j, logger)
	if hook != nil {
		hook.Public = publicRoutes(routes, obs.listen != "")
	}
	if obs.listen != "" {
		ctx, stop := context.WithCancel(ctx)
		defer stop() // the server ends with the bot, however the bot ends
		if err := listenMetrics(ctx, obs.listen, routes, logger); err != nil {
			return err
		}
	}
	if replica.name != "" {
		err = join(ctx, j, telegram.Transport, replica, logger)
	} else {
		err = own(ctx, j, telegram.Transport, logger)
	}
	if err != nil {
		return err
	}
	m.unknown.Add(float64(len(j.Recovered())))
	files, err := filestore.Open(cfg.filesDir())
	if err != nil {
		return err
	}
	tg, err := telegram.New(ctx, j, telegram.Options{Token: token, APIURL: env.Getenv("TELEGRAM_API_URL"),
		PollTimeout: rf.poll, Webhook: hook, Logger: logger, Counters: m.counters, Files: files, ReviewURL: rf.reviewURL})
	if err != nil {
		return err
	}
	ctx, stop := stopWhenLost(ctx, j)
	defer stop()
	s := serving{cfg: cfg, env: env, logger: logger, j: j, tg: tg, m: m, mcpListen: mcpListen, files: files, rf: rf}
	served, quit := make(chan error, 1), make(chan struct{})
	defer close(quit)
	go func() { served <- s.rounds(ctx, p) }()
	go func() {
		select {
		case <-ctx.Done():
			logger.Info("stopping: the sends under way finish and are journaled first")
		case <-quit:
		}
	}()
	defer logger.Info("stopped")
	select {
	case err = <-served:
	case <-stuckAfterLoss(j, replica.lease, quit):
		abandoned = true
		return fmt.Errorf("%w: stopped a lease after, leaving the work the database did not answer for to the other replicas, so that a new process joins under the name", journal.ErrReplicaLost)
	}
	if errors.Is(context.Cause(ctx), journal.ErrReplicaLost) {
		return fmt.Errorf("%w: stopped, so that a new process joins under the name and recovers what this one left", journal.ErrReplicaLost)
	}
	return err
}

// rounds serves under p, and again under the policy that pairing a person
// makes, until the bot ends.
func (s *serving) rounds(ctx context.Context, p *policy.Policy) (err error) {
	for first := true; ; first = false {
		if !first {
			if p, err = loadPolicy(s.cfg, s.env); err != nil { // now with the person paired
				return err
			}
		}
		if err = s.serve(ctx, p, first); !errors.Is(err, telegram.ErrPaired) {
			return err
		}
	}
}

// stuckAfterLoss returns a channel closed a lease after this replica found its
// name lock lost (never, for a journal that is no replica, nor once quit is
// closed). Stopping, it lets
// the work in flight finish: the record of a commit's answer, an update being
// stored. A database out of reach (a link gone silent) answers none of it, and
// would keep the process from exiting, and its supervisor from starting a new
// one, until the link comes back or TCP gives up, a quarter of an hour later.
// By a lease after the loss the other replicas have taken over what it held (a
// commit on the wire is unknown there, never resent), so exiting then leaves
// nothing that waiting would have saved.
func stuckAfterLoss(j *journal.Journal, lease time.Duration, quit <-chan struct{}) <-chan struct{} {
	stuck := make(chan struct{})
	lost := j.NameLost()
	if lost == nil {
		return stuck
	}
	go func() {
		select {
		case <-lost:
		case <-quit:
			return
		}
		t := time.NewTimer(lease)
		defer t.Stop()
		select {
		case <-t.C:
			close(stuck)
		case <-quit:
		}
	}()
	return stuck
}

// serving is what a countersign run keeps while it serves under one policy and then,
// once a person paired, under the next: the journal, the connection to
// Telegram, the metrics.
type serving struct {
	cfg       Config
	env       Env
	logger    *slog.Logger
	j         *journal.Journal
	tg        *telegram.Bot
	m         *botMetrics
	mcpListen string
	files     *filestore.Store
	rf        runFlags
}

// serve serves Telegram (and MCP, with -mcp-listen) under p until ctx ends, the
// bot cannot go on, or a person paired (telegram.ErrPaired): the access lists
// then change, and so does everything wired over them, which is why each
// round builds its app afresh. With no operator in p, pairing is open.
func (s *serving) serve(ctx context.Context, p *policy.Policy, first bool) error {
	if err := recordAccess(s.cfg, p); err != nil { // for a countersign mcp an agent starts beside this one
		return err
	}
	a, err := newApp(s.cfg, s.j, p, edge{sender: s.tg.Sender(), transport: telegram.Transport, observe: s.m.observe}, s.env.Getenv, s.logger)
	if err != nil {
		return err
	}
	ctx, stop := context.WithCancel(ctx)
	defer stop() // what this round started ends with it: agent CLI runs, the MCP server
	if err := useAgentCLI(ctx, s.cfg, a, s.env.Getenv, s.logger); err != nil {
		return err
	}
	if first {
		err = logStart(ctx, s.logger, s.tg, a, s.cfg)
	} else {
		s.logger.Info("serving again, with the person paired", "operators", len(p.Access.Operators), "approvers", len(p.Access.Approvers))
	}
	if err != nil {
		return err
	}
	s.m.follow(a.operator)
	defer logUnknown(a.operator, s.logger, s.j.Recovered())()
	defer logDecisions(a.operator, s.logger)()
	deps := telegram.Deps{Handler: a.handler, Policy: p}
	if deps.Pairing, err = s.pairing(p); err != nil {
		return err
	}
	if s.mcpListen != "" {
		done, err := listenMCP(ctx, s.mcpListen, a, s.env, s.logger)
		if err != nil {
			return err
		}
		defer func() { stop(); <-done }() // the next round listens on the same address
	}
	if s.rf.reviewListen != "" || s.rf.reviewMount != nil {
		done, err := s.listenReview(ctx, a)
		if err != nil {
			return err
		}
		defer func() { stop(); <-done }()
	}
	return s.tg.Serve(ctx, deps)
}

// pairing is the pairing desk of a policy that names no operator, nil for
// one that names some: their bot drops the codes it gave before, which pair
// nobody now.
func (s *serving) pairing(p *policy.Policy) (telegram.Pairing, error) {
	if len(p.Access.Operators) > 0 {
		return nil, pairing.Drop(s.cfg.DataDir)
	}
	return openPairing(s.cfg, s.logger)
}

// stopWhenLost returns a context that ends, with journal.ErrReplicaLost as its
// cause, when this replica finds its name lock lost: it commits nothing more,
// and a process that stops is restarted by its supervisor and joins again.
func stopWhenLost(ctx context.Context, j *journal.Journal) (context.Context, context.CancelFunc) {
	ctx, cancel := context.WithCancelCause(ctx)
	go func() {
		select {
		case <-j.NameLost():
			cancel(journal.ErrReplicaLost)
		case <-ctx.Done():
		}
	}()
	return ctx, func() { cancel(nil) }
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
	switch {
	case len(a.policy.Access.Operators) == 0:
		logger.Info(fmt.Sprintf("pairing open: nobody operates this bot yet; the first person to write to @%s in a private chat gets a one-time code there, "+
			"and %s <that code> on this machine makes them operator and approver (or set access.operators and access.approvers, or BOT_OPERATORS and BOT_APPROVERS)",
			tg.Me().Username, pairCommand(cfg)), "code_valid_for", pairing.TTL.String())
	case len(a.policy.Access.Approvers) == 0:
		logger.Warn("no approvers: set access.approvers or BOT_APPROVERS, or every commit that needs a tap waits until it expires")
	}
	return nil
}
