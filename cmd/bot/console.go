package main

import (
	"context"
	"fmt"

	"github.com/countersign/countersign/console"
)

// runConsole is "countersign console": the operator in this terminal. The terminal's user is
// both operator and approver; sends are printed, not delivered.
func runConsole(ctx context.Context, args []string, env Env) int {
	var cfg Config
	if code := parseArgs(flags("console", env, &cfg), args, env, "countersign console [-data DIR] [-policies FILE]"); code >= 0 {
		return code
	}
	p, err := loadPolicy(cfg, env)
	if err != nil {
		fmt.Fprintln(env.Stderr, env.program()+" console:", err)
		return exitError
	}
	p.Access.Operators = append(p.Access.Operators, console.User)
	p.Access.Approvers = append(p.Access.Approvers, console.User)
	logger := newLogger(env.Stderr)
	j, err := openJournal(ctx, cfg)
	if err != nil {
		fmt.Fprintln(env.Stderr, env.program()+" console:", err)
		return exitError
	}
	defer j.Close()
	// The console sends (prints) only its own operations; a bot running on the
	// same data folder keeps sending its own.
	if err := own(ctx, j, console.Transport, logger); err != nil {
		fmt.Fprintln(env.Stderr, env.program()+" console:", err)
		return exitError
	}
	a, err := newApp(cfg, j, p, edge{sender: console.NewPrinter(env.Stdout), transport: console.Transport}, env.Getenv, logger)
	if err != nil {
		fmt.Fprintln(env.Stderr, env.program()+" console:", err)
		return exitError
	}
	if err := useAgentCLI(ctx, cfg, a, env.Getenv, logger); err != nil {
		fmt.Fprintln(env.Stderr, env.program()+" console:", err)
		return exitError
	}
	warnOpenFolders(logger, cfg)
	if err := a.operator.Resume(ctx); err != nil {
		fmt.Fprintln(env.Stderr, env.program()+" console:", err)
		return exitError
	}
	c := &console.Console{Handler: a.handler, In: env.Stdin, Out: env.Stdout}
	// The console owns sending its transport: it sweeps (expiry, reconcile, and
	// the approvals other processes asked of it) while it runs.
	sweep, stopSweep := context.WithCancel(ctx)
	swept := make(chan struct{})
	go func() { defer close(swept); a.operator.Sweep(sweep) }()
	err = c.Run(ctx)
	stopSweep()
	<-swept
	a.operator.Wait()
	if err != nil && ctx.Err() == nil {
		fmt.Fprintln(env.Stderr, env.program()+" console:", err)
		return exitError
	}
	return exitOK
}
