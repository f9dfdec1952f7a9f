package main

import (
	"context"
	"fmt"
	"log/slog"
	"os/exec"
	"path/filepath"
	"slices"

	"github.com/countersign/countersign/agent/cli"
	"github.com/countersign/countersign/mcp"
	"github.com/countersign/countersign/model"
	"github.com/countersign/countersign/policy"
)

// agentCLI is the agent CLI the environment or the policy chooses as the brain:
// COUNTERSIGN_AGENT wins over model.provider; "" is a language model through its
// SDK (or none).
func agentCLI(p *policy.Policy, getenv func(string) string) (string, error) {
	if v := getenv("COUNTERSIGN_AGENT"); v != "" {
		if err := policy.CheckProvider(v); err != nil {
			return "", fmt.Errorf("COUNTERSIGN_AGENT: %w", err)
		}
		return v, nil
	}
	return p.Models().Provider, nil
}

// useAgentCLI makes the agent CLI chosen, if one is, the brain behind a's plain
// text: each message a headless run whose only tools are Countersign's, served
// in this process (the one that sends) on a loopback listener with a bearer
// token per run bound to the chat's task. The listener ends with ctx.
func useAgentCLI(ctx context.Context, cfg Config, a *app, getenv func(string) string, logger *slog.Logger) error {
	name, err := agentCLI(a.policy, getenv)
	switch {
	case err != nil || name == "":
		return err
	case !a.policy.Models().Enabled:
		logger.Info("an agent CLI is chosen, but model.enabled is false in the policy: plain text is not sent to it", "agent", name)
		a.handler.Agent = nil
		return nil
	}
	provider, err := cliProvider(name, getenv)
	if err != nil {
		return err
	}
	srv, err := newMCP(a, nil, logger)
	if err != nil {
		return err
	}
	runs, err := srv.ServeRuns(ctx)
	if err != nil {
		return err
	}
	names := append(a.tools.Names(), mcp.FollowUpTools...)
	coord, err := cli.New(cli.Options{Provider: provider, Gate: runsGate{runs: runs, names: names},
		Sessions: a.journal, Operator: a.operator, Journal: a.journal,
		Dir: filepath.Join(cfg.DataDir, "agents", name), Env: cliEnv(getenv),
		Transport: a.handler.Surface, // the chats' transport: a replica's turns are keyed by it
		Observe:   func(s model.Step) { logger.Info("agent cli", "agent", name, "step", s.String(), "attempt", s.Attempt) }})
	if err != nil {
		return err
	}
	a.handler.Agent = coord
	logger.Info("plain text goes to an agent CLI", "agent", name, "tools", names, "attempts", a.policy.Models().Attempts)
	return nil
}

// cliProvider is the provider of the CLI name, its binary found at start.
func cliProvider(name string, getenv func(string) string) (cli.Provider, error) {
	switch name {
	case policy.ProviderClaudeCode:
		path := orDefault(getenv("COUNTERSIGN_CLAUDE"), "claude")
		found, err := exec.LookPath(path)
		if err != nil {
			return nil, fmt.Errorf("%s: the claude binary was not found (%v): install npm package @anthropic-ai/claude-code, or set COUNTERSIGN_CLAUDE to its path", name, err)
		}
		return cli.ClaudeCode{Path: found}, nil
	case policy.ProviderCodex:
		path := orDefault(getenv("COUNTERSIGN_CODEX"), "codex")
		found, err := exec.LookPath(path)
		if err != nil {
			return nil, fmt.Errorf("%s: the codex binary was not found (%v): install npm package @openai/codex, or set COUNTERSIGN_CODEX to its path", name, err)
		}
		return cli.Codex{Path: found, Home: getenv("CODEX_HOME"), ModelProvider: codexModel(getenv)}, nil
	}
	return nil, fmt.Errorf("%s: this build does not drive that agent CLI", name)
}

// codexModel is the model service Codex asks when OPENAI_BASE_URL names one
// (any server of the Responses API; the key in OPENAI_API_KEY, the model in
// OPENAI_MODEL), with Codex's own retries off; nil leaves Codex's built-in
// provider and its login, whose retries Codex does not let anyone turn off.
func codexModel(getenv func(string) string) *cli.CodexModelProvider {
	base := getenv("OPENAI_BASE_URL")
	if base == "" {
		return nil
	}
	return &cli.CodexModelProvider{ID: "countersign-openai", BaseURL: base, EnvKey: "OPENAI_API_KEY", Model: getenv("OPENAI_MODEL")}
}

func orDefault(v, def string) string {
	if v == "" {
		return def
	}
	return v
}

// runsGate opens the tools of the runs server to one task's runs.
type runsGate struct {
	runs  *mcp.Runs
	names []string
}

func (g runsGate) Open(_ context.Context, taskID string) (cli.Tools, func(), error) {
	token, release := g.runs.Bind(taskID)
	return cli.Tools{Server: mcp.Name, URL: g.runs.URL(), Token: token, Names: slices.Clone(g.names)}, release, nil
}

// cliVars are the variables an agent CLI may need of the bot's environment: its
// home and login, its model service and proxy. Nothing else passes: not the bot
// token, not the MCP token, not the database URL.
var cliVars = []string{"PATH", "HOME", "USER", "LANG", "LC_ALL", "TMPDIR", "TZ",
	"XDG_CONFIG_HOME", "XDG_CACHE_HOME", "XDG_DATA_HOME", "XDG_STATE_HOME",
	"HTTPS_PROXY", "HTTP_PROXY", "NO_PROXY", "https_proxy", "http_proxy", "no_proxy", "NODE_EXTRA_CA_CERTS",
	"ANTHROPIC_API_KEY", "ANTHROPIC_AUTH_TOKEN", "ANTHROPIC_BASE_URL", "ANTHROPIC_MODEL",
	"CLAUDE_CONFIG_DIR", "CLAUDE_CODE_USE_BEDROCK", "CLAUDE_CODE_USE_VERTEX", "CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC",
	"DISABLE_TELEMETRY", "AWS_REGION", "AWS_PROFILE", "CLOUD_ML_REGION", "ANTHROPIC_VERTEX_PROJECT_ID",
	"CODEX_HOME", "OPENAI_API_KEY", "CODEX_API_KEY"}

// cliEnv is the environment an agent CLI starts from: cliVars, those set.
func cliEnv(getenv func(string) string) []string {
	var env []string
	for _, k := range cliVars {
		if v := getenv(k); v != "" {
			env = append(env, k+"="+v)
		}
	}
	return env
}
