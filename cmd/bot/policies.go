package main

import (
	"context"
	"errors"
	"flag"
	"fmt"

	"github.com/countersign/countersign/policy"
	"github.com/countersign/countersign/tools"
)

// runPolicies is "countersign policies check [FILE]": it checks FILE, or -policies, else
// ./policies.yaml, and prints "ok" and exits 0 for a policy the bot would start
// with, or prints every error and exits 1.
func runPolicies(ctx context.Context, args []string, env Env) int {
	const use = "countersign policies check [-policies FILE | FILE]"
	if _, code := subcommand(env, "countersign policies", use, args, "check"); code >= 0 {
		return code
	}
	var cfg Config
	fs := flag.NewFlagSet("countersign policies check", flag.ContinueOnError) // it reads the policy file alone
	fs.SetOutput(env.Stderr)
	fs.StringVar(&cfg.Policies, "policies", "./policies.yaml", "policy file")
	if code := parseArgs(fs, args[1:], env, use, "[FILE]"); code >= 0 {
		return code
	}
	if fs.NArg() == 1 {
		given := false
		fs.Visit(func(f *flag.Flag) { given = given || f.Name == "policies" })
		if given {
			return usageError(env, use, env.program()+" policies check: -policies and FILE both name the file to check; give one")
		}
		cfg.Policies = fs.Arg(0)
	}
	p, err := policy.Load(cfg.Policies)
	if errors.Is(err, policy.ErrNoFile) {
		err = fmt.Errorf("%w (%s init -policies %s writes one)", err, env.program(), cfg.Policies)
	}
	if err == nil {
		err = p.ApplyEnv(env.Getenv)
	}
	if err == nil {
		_, err = tools.NewRegistry(p, nil, tools.WithEnv(env.Getenv)) // every declared tool must be implemented, its variables set
	}
	if err != nil {
		fmt.Fprintln(env.Stdout, err)
		return exitError
	}
	fmt.Fprintln(env.Stdout, "ok")
	return exitOK
}
