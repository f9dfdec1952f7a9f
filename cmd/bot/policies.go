package main

import (
	"context"
	"fmt"

	"github.com/countersign/countersign/policy"
	"github.com/countersign/countersign/tools"
)

// runPolicies is "bot policies check": it prints "ok" and exits 0 for a policy the
// bot would start with, or prints every error and exits 1.
func runPolicies(ctx context.Context, args []string, env Env) int {
	if len(args) == 0 || args[0] != "check" {
		fmt.Fprintln(env.Stderr, "usage: bot policies check [-policies FILE]")
		return exitUsage
	}
	var cfg Config
	if code := parse(flags("policies check", env, &cfg), args[1:]); code >= 0 {
		return code
	}
	p, err := policy.Load(cfg.Policies)
	if err == nil {
		err = p.ApplyEnv(env.Getenv)
	}
	if err == nil {
		_, err = tools.NewRegistry(p, nil) // every declared tool must be implemented
	}
	if err != nil {
		fmt.Fprintln(env.Stdout, err)
		return exitError
	}
	fmt.Fprintln(env.Stdout, "ok")
	return exitOK
}
