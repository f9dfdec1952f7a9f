package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"path/filepath"

	sdk "github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/countersign/countersign/mcp"
	"github.com/countersign/countersign/policy"
	"github.com/countersign/countersign/telegram"
)

// runMCP is "countersign mcp": the policy's tools for an outside agent over stdio, beside
// a running bot on the same data folder. It creates operations and follows them
// in the journal; the bot shows their cards and sends them. stdout is the
// protocol: everything else goes to stderr.
func runMCP(ctx context.Context, args []string, env Env) int {
	var cfg Config
	if code := parseArgs(flags("mcp", env, &cfg), args, env, "countersign mcp [-data DIR] [-policies FILE]"); code >= 0 {
		return code
	}
	logger := newLogger(env.Stderr)
	if err := serveMCP(ctx, cfg, env, logger); err != nil {
		fmt.Fprintln(env.Stderr, env.program()+" mcp:", err)
		return exitError
	}
	return exitOK
}

func serveMCP(ctx context.Context, cfg Config, env Env, logger *slog.Logger) error {
	p, err := loadPolicy(cfg, env)
	if err != nil {
		return err
	}
	// An agent starts this process with its own environment: the lists the bot
	// on this data folder asks are those of its record, not the shell's.
	recorded, err := runningAccess(cfg, p, env.Getenv)
	if err != nil {
		return err
	}
	if len(p.Access.Approvers) == 0 {
		return noApprovers{policy: cfg.Policies, data: cfg.DataDir} // before anything is opened
	}
	if recorded {
		logger.Info("access lists of the countersign run on this data folder", "record", filepath.Join(cfg.DataDir, accessFile),
			"operators", len(p.Access.Operators), "approvers", len(p.Access.Approvers))
	}
	j, err := openJournal(ctx, cfg)
	if err != nil {
		return err
	}
	defer j.Close()
	// Operations made here are the bot's to deliver: recorded under its
	// transport, never committed by this process.
	a, err := newApp(cfg, j, p, edge{transport: telegram.Transport, remote: true}, env.Getenv, logger)
	if err != nil {
		return err
	}
	srv, err := newMCP(a, func() (int, bool, error) { return j.Owner(telegram.Transport) }, logger)
	if err != nil {
		return err
	}
	if msg := srv.Check(); msg != "" {
		fmt.Fprintln(env.Stderr, env.program()+" mcp:", msg)
	}
	logger.Info("countersign MCP server on stdio", "policy", cfg.Policies, "tools", a.tools.Names(), "data", cfg.DataDir)
	t := &sdk.IOTransport{Reader: io.NopCloser(env.Stdin), Writer: nopWriteCloser{env.Stdout}}
	err = srv.Run(ctx, t)
	if ctx.Err() != nil || errors.Is(err, io.EOF) {
		return nil // the client went away, or we were asked to stop
	}
	return err
}

// newMCP is the MCP server over an app's operator.
func newMCP(a *app, owner func() (int, bool, error), logger *slog.Logger) (*mcp.Server, error) {
	return mcp.New(mcp.Options{Operator: a.operator, Journal: a.journal, Vault: a.vault, Tools: a.tools, Policy: a.policy,
		Owner: owner, Logger: logger})
}

// checkMCP refuses, at start, what -mcp-listen cannot serve: a policy without
// approvers, an address off loopback without a token.
func checkMCP(p *policy.Policy, cfg Config, addr string, env Env) error {
	if len(p.Access.Approvers) == 0 {
		return noApprovers{policy: cfg.Policies, data: cfg.DataDir}
	}
	return mcp.CheckListen(addr, env.Getenv("COUNTERSIGN_MCP_TOKEN"))
}

// listenMCP starts "countersign run -mcp-listen ADDR": the MCP server in the process that
// sends, on streamable HTTP, with COUNTERSIGN_MCP_TOKEN as its bearer token
// (required off loopback). It fails at start, before Telegram is polled, on a
// policy without approvers, an address it may not or cannot serve. The server
// ends with ctx; the channel returned is closed once it has, and the address
// is free again.
func listenMCP(ctx context.Context, addr string, a *app, env Env, logger *slog.Logger) (<-chan struct{}, error) {
	token := env.Getenv("COUNTERSIGN_MCP_TOKEN")
	if err := mcp.CheckListen(addr, token); err != nil {
		return nil, err
	}
	srv, err := newMCP(a, nil, logger)
	if err != nil {
		return nil, err
	}
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		return nil, fmt.Errorf("mcp: %w", err)
	}
	logger.Info("MCP server listening", "addr", ln.Addr().String(), "bearer_token", token != "")
	done := make(chan struct{})
	go func() {
		defer close(done)
		if err := srv.Serve(ctx, ln, token); err != nil {
			logger.Error("MCP server stopped", "err", err)
		}
	}()
	return done, nil
}

type nopWriteCloser struct{ io.Writer }

func (nopWriteCloser) Close() error { return nil }
