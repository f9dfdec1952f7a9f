package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"os"
	"path/filepath"

	"github.com/countersign/countersign/agent"
	"github.com/countersign/countersign/command"
	"github.com/countersign/countersign/coord"
	"github.com/countersign/countersign/filestore"
	"github.com/countersign/countersign/internal/wiring"
	"github.com/countersign/countersign/journal"
	"github.com/countersign/countersign/model"
	"github.com/countersign/countersign/operator"
	"github.com/countersign/countersign/policy"
	"github.com/countersign/countersign/review"
	"github.com/countersign/countersign/tools"
	"github.com/countersign/countersign/vault"
	"github.com/countersign/countersign/verifier"
)

// Config is what every command that opens the data folder needs.
type Config struct {
	DataDir  string
	VaultDir string // "" means DataDir/vault
	Policies string
	// Journal is -journal, else COUNTERSIGN_DATABASE_URL: a postgres:// URL puts
	// the journal on PostgreSQL; "" means DataDir/journal.db. It may carry a
	// password, so it is never logged (journal.Where names it).
	Journal string
}

// journalName is what journal.Open takes: the URL, or the file in the data folder.
func (c Config) journalName() string {
	if c.Journal != "" {
		return c.Journal
	}
	return filepath.Join(c.DataDir, "journal.db")
}

// vaultDir is where the envelopes go: -vault, or the vault folder in the data folder.
func (c Config) vaultDir() string {
	if c.VaultDir != "" {
		return c.VaultDir
	}
	return filepath.Join(c.DataDir, "vault")
}

// filesDir is where the files a payload sends are kept by their content.
func (c Config) filesDir() string { return filepath.Join(c.DataDir, "files") }

// flags returns a flag set for a command with the shared -data and -policies flags.
func flags(name string, env Env, cfg *Config) *flag.FlagSet {
	fs := dataFlags(name, env, cfg)
	fs.StringVar(&cfg.Policies, "policies", "./policies.yaml", "policy file")
	return fs
}

// dataFlags returns a flag set with the data folder's flags: -data, -journal
// and -vault.
func dataFlags(name string, env Env, cfg *Config) *flag.FlagSet {
	return folderFlags(name, env, cfg, "journal", "vault")
}

// folderFlags returns a flag set with -data and those of "journal", "vault"
// and "policies" that the command uses: a command takes exactly its own
// flags, and refuses one it would ignore.
func folderFlags(name string, env Env, cfg *Config, which ...string) *flag.FlagSet {
	fs := flag.NewFlagSet("countersign "+name, flag.ContinueOnError)
	fs.SetOutput(env.Stderr)
	fs.StringVar(&cfg.DataDir, "data", "./data", "data folder: the journal (journal.db) and the vault")
	if cfg.Journal == "" && env.Getenv != nil {
		cfg.Journal = env.Getenv("COUNTERSIGN_DATABASE_URL") // the flag, when given, wins
	}
	for _, w := range which {
		switch w {
		case "journal":
			fs.StringVar(&cfg.Journal, "journal", cfg.Journal, "journal on PostgreSQL: a postgres:// URL (default $COUNTERSIGN_DATABASE_URL, else DATA/journal.db)")
		case "vault":
			fs.StringVar(&cfg.VaultDir, "vault", "", "vault folder for unknown-outcome envelopes, e.g. an Obsidian vault (default DATA/vault)")
		case "policies":
			fs.StringVar(&cfg.Policies, "policies", "./policies.yaml", "policy file")
		}
	}
	return fs
}

// app is an operator wired over the data folder.
type app struct {
	policy   *policy.Policy
	journal  *journal.Journal
	vault    *vault.Vault
	tools    *tools.Registry
	operator *operator.Operator
	handler  *command.Handler
	logger   *slog.Logger
}

// loadPolicy reads the policy file, applies BOT_OPERATORS / BOT_APPROVERS, and
// adds the person paired on the data folder (see withPaired).
func loadPolicy(cfg Config, env Env) (*policy.Policy, error) {
	p, err := policy.Load(cfg.Policies)
	if errors.Is(err, policy.ErrNoFile) {
		return nil, fmt.Errorf("%w (%s init -policies %s writes one)", err, env.program(), cfg.Policies)
	}
	if err != nil {
		return nil, err
	}
	if err := p.ApplyEnv(env.Getenv); err != nil {
		return nil, err
	}
	if err := checkDataDir(cfg); err != nil {
		return nil, err
	}
	if err := withPaired(cfg, p); err != nil {
		return nil, err
	}
	return p, nil
}

// checkDataDir refuses a data folder that is something else: a file given to
// -data would otherwise surface as whichever file of the folder is read
// first (paired.json: "not a directory").
func checkDataDir(cfg Config) error {
	if fi, err := os.Stat(cfg.DataDir); err == nil && !fi.IsDir() {
		return fmt.Errorf("the data folder %s is a file, not a folder: give -data a folder (it is made if it does not exist)", cfg.DataDir)
	}
	return nil
}

// openJournal opens the journal in the data folder, creating the folder; a
// journal on PostgreSQL needs no folder (countersign migrate may run where none can be
// written).
func openJournal(ctx context.Context, cfg Config) (*journal.Journal, error) {
	if journal.IsPostgres(cfg.journalName()) {
		return journal.Open(ctx, cfg.journalName(), journal.WithSeenKey(operator.SeenKey))
	}
	if err := checkDataDir(cfg); err != nil {
		return nil, err
	}
	if err := os.MkdirAll(cfg.DataDir, 0o700); err != nil {
		return nil, fmt.Errorf("data folder: %w", err)
	}
	return journal.Open(ctx, cfg.journalName(), journal.WithSeenKey(operator.SeenKey))
}

// edge is the world's edge of an app: the sender and the transport it delivers
// through (see operator.Options.Transport). The zero edge sends nothing: the app
// of a command that only reads and resolves.
type edge struct {
	sender    tools.Sender
	transport string
	// remote records operations under transport for the process that owns it to
	// deliver (a stdio countersign mcp beside a bot): this one never commits them.
	remote bool
	// observe hears of each commit attempt as it ends (operator.Options.Observe):
	// the process's metrics. Nil for none.
	observe func(operator.Attempt)
}

// own makes this process the sender of transport's operations, with their crash
// recovery, and logs what the recovery found.
func own(ctx context.Context, j *journal.Journal, transport string, logger *slog.Logger) error {
	if err := j.Own(ctx, transport); err != nil {
		return err
	}
	for _, id := range j.Recovered() {
		logger.Error("operation was committing when the process stopped; its outcome is unknown and it will not be resent", "op", id)
	}
	return nil
}

// join makes this process the replica r among those that send transport's
// operations from the journal, with the crash recovery of what the same name left
// committing, and the chats' turns it left dropped; what other replicas left
// is recovered when their lease is past.
func join(ctx context.Context, j *journal.Journal, transport string, r replicaOf, logger *slog.Logger) error {
	if err := j.Join(ctx, transport, r.name, r.lease); err != nil {
		return err
	}
	if err := coord.New(j).Joined(ctx); err != nil {
		return err
	}
	logger.Info("joined as a replica", "transport", transport, "lease", j.Lease())
	for _, id := range j.Recovered() {
		logger.Error("operation was committing when this replica last stopped; its outcome is unknown and it will not be resent", "op", id)
	}
	return nil
}

// newApp wires the operator over an open journal with e as the world's edge,
// as internal/wiring builds it, and the brain the environment configures.
func newApp(cfg Config, j *journal.Journal, p *policy.Policy, e edge, getenv func(string) string, logger *slog.Logger) (*app, error) {
	files, err := filestore.Open(cfg.filesDir())
	if err != nil {
		return nil, err
	}
	v, err := vault.Open(cfg.vaultDir())
	if err != nil {
		return nil, err
	}
	m, err := newModel(getenv, p, logger)
	if err != nil {
		return nil, err
	}
	w, err := wiring.New(wiring.Parts{Journal: j, Policy: p, Sender: e.sender, Files: files, Vault: v, Getenv: getenv, Logger: logger,
		Transport: e.transport, Remote: e.remote, Observe: e.observe, Review: modelCheck(p, j, v, m, logger),
		// Every process asks it, served page or not: the bot shows on its page the
		// operations a stdio countersign mcp or the console made.
		Shows: review.Shows})
	if err != nil {
		return nil, err
	}
	op, reg, h := w.Operator, w.Tools, w.Handler
	if name, _ := agentCLI(p, getenv); m != nil && name == "" { // an agent CLI, when chosen, is the brain instead
		h.Agent = agent.NewLoop(m.provider, m.name, op, reg, agent.LoopLimits{}, func(t agent.Transition) {
			logger.Info("agent", "transition", t.String(), "request", t.Request, "detail", t.Detail)
		}, agent.WithFallback(m.envFallback))
		logger.Info("plain text goes to the model", "model", m.name, "fallback", orNone(m.fallback), "fallback_from", m.fallbackFrom,
			"attempts", p.Models().Attempts, "tools", reg.Names())
	}
	return &app{policy: p, journal: j, vault: v, tools: reg, operator: op, handler: h, logger: logger}, nil
}

// brainModel is the language model the environment configures, behind its recovery.
type brainModel struct {
	provider model.Provider
	name     string
	// fallback is the one in force for new tasks, from fallbackFrom; envFallback
	// is the environment's, which overrides every task's snapshot.
	fallback, fallbackFrom, envFallback string
}

// newModel reads the model from the environment and the policy's model section;
// nil when none is configured or the policy turns it off. The environment wins
// where both name a model or a fallback.
func newModel(env func(string) string, p *policy.Policy, logger *slog.Logger) (*brainModel, error) {
	settings := p.Models()
	getenv := func(k string) string {
		if v := env(k); v != "" || (k != "ANTHROPIC_MODEL" && k != "OPENAI_MODEL") {
			return v
		}
		return settings.Name // the policy's model fills an unset variable
	}
	provider, name, ok, err := model.FromEnv(getenv)
	if err != nil || !ok {
		return nil, err
	}
	if !settings.Enabled {
		logger.Info("a model is configured, but model.enabled is false in the policy: plain text is not sent to it")
		return nil, nil
	}
	m := &brainModel{name: name, fallback: settings.Fallback, fallbackFrom: "policy"}
	fallbackVar := "OPENAI_FALLBACK_MODEL"
	if _, anthropic := provider.(*model.Anthropic); anthropic {
		fallbackVar = "ANTHROPIC_FALLBACK_MODEL"
	}
	if m.envFallback = env(fallbackVar); m.envFallback != "" {
		m.fallback, m.fallbackFrom = m.envFallback, fallbackVar
	}
	if m.fallback == "" {
		m.fallbackFrom = "none"
	}
	logStep := func(s model.Step) {
		if s.Action != model.ActionOK {
			logger.Info("model request", "step", s.String())
		}
	}
	if s, ok := provider.(model.Streamer); ok {
		provider = model.NewWatch(s, settings.StallWarning, settings.StallAbort, logStep)
	}
	retry := model.RetryPolicy(settings)
	retry.FallbackModel = m.fallback
	m.provider = model.NewRecovery(provider, retry, model.WithObserver(logStep))
	return m, nil
}

func orNone(s string) string {
	if s == "" {
		return "none"
	}
	return s
}

func newLogger(w io.Writer) *slog.Logger { return newLoggerAt(w, slog.LevelInfo) }

// newLoggerAt is a logger of the lines at level and above.
func newLoggerAt(w io.Writer, level slog.Level) *slog.Logger {
	return slog.New(slog.NewTextHandler(w, &slog.HandlerOptions{Level: level}))
}

// parseLevel is -log-level's level, or nil when it names none.
func parseLevel(s string) *slog.Level {
	var l slog.Level
	switch s {
	case "debug", "info", "warn", "error":
		if l.UnmarshalText([]byte(s)) == nil {
			return &l
		}
	}
	return nil
}

// modelCheck is what the verifier gains with verify.model_check set and a model
// configured: the model is asked too, with read-only access to the journal and
// the vault. Nil otherwise.
func modelCheck(p *policy.Policy, j *journal.Journal, v *vault.Vault, m *brainModel, logger *slog.Logger) func(*verifier.Checker) *verifier.Checker {
	switch {
	case len(p.Verify.ModelCheck) == 0:
		return nil
	case m == nil:
		logger.Warn("verify.model_check is set but no model is configured (ANTHROPIC_API_KEY or OPENAI_API_KEY / OPENAI_BASE_URL); the model check is skipped")
		return nil
	}
	logger.Info("model check on", "model", m.name, "tools", p.Verify.ModelCheck)
	return func(check *verifier.Checker) *verifier.Checker {
		return check.WithModel(agent.NewReviewer(m.provider, m.name, agent.JournalReader(j), v))
	}
}
