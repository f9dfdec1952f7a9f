// Command countersign is Countersign: a Telegram operator for LLM agents that asks a human
// before anything leaves and never sends the same message twice.
//
//	countersign init      a first bot's policy and data folder, and a check of its token
//	countersign run       the Telegram bot
//	countersign pair      confirm the code a bot without operators gave its first user
//	countersign console   the same operator in a terminal, no Telegram needed
//	countersign demo      the bot against a Telegram of its own: the card flow without a token
//	countersign mcp       the tools for an outside agent (MCP over stdio), beside countersign run
//	countersign ops       the journal: list, show
//	countersign vault     the envelopes of unknown outcomes: list, show, resolve, gc
//	countersign policies  check a policy file
//	countersign migrate   bring the journal's schema up to date
//	countersign audit     the audit trail: verify, export (signed), keygen
//	countersign backup    a consistent copy of the data folder, taken while the bot runs
//	countersign version   the module version and the commit the binary was built from
//
// Exit codes: 0 ok, 1 error, 2 usage.
package main

import (
	"context"
	"fmt"
	"io"
	"os"
	"os/signal"
	"path/filepath"
	"strings"
	"syscall"

	// The zone database in the binary: quiet hours in a policy's time zone work
	// on a minimal host or container without one.
	_ "time/tzdata"
)

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	os.Exit(Main(ctx, os.Args[1:], Env{Stdin: os.Stdin, Stdout: os.Stdout, Stderr: os.Stderr, Getenv: os.Getenv, Name: filepath.Base(os.Args[0])}))
}

// Env is what a command sees of its process, so that tests run Main in process.
type Env struct {
	Stdin          io.Reader
	Stdout, Stderr io.Writer
	Getenv         func(string) string
	// Name is the program as it was invoked (the base of os.Args[0]: "bot"
	// after go install, "countersign" when built so), for usage lines and
	// error prefixes; empty is "countersign".
	Name string
}

// program is the name usage lines and errors give the program.
func (e Env) program() string {
	if e.Name == "" {
		return "countersign"
	}
	return e.Name
}

// named is text written with the installed name "countersign", naming the
// program as it was invoked instead.
func (e Env) named(text string) string {
	if e.program() == "countersign" {
		return text
	}
	return strings.ReplaceAll(text, "countersign ", e.program()+" ")
}

const usage = `usage: countersign <command> [flags]

commands:
  init [-user ID]           write policies.yaml and the data folder, check TELEGRAM_BOT_TOKEN
  run                       the Telegram bot (TELEGRAM_BOT_TOKEN)
  pair <code>               make whoever got this code in Telegram operator and approver
  console                   the operator in this terminal, no Telegram
  demo [-listen ADDR]       the bot against a built-in Telegram: tap its cards here or on a local web page
  mcp                       the tools for an outside agent over stdio, beside countersign run
  ops list|show [op_id]     the journal's operations (-json for scripts)
  vault list|show|resolve|gc  the unknown-outcome envelopes (-json for scripts)
  policies check [FILE]     validate a policy file (default -policies, ./policies.yaml)
  migrate [-check]          bring the journal's schema up to date (or say what is pending)
  audit verify|export|keygen  check the audit trail, export it signed, check an export offline
  backup -to DIR            a consistent copy of the data folder (journal, vault, files), while it runs
  approver totp|list        enrol an approver's TOTP second factor on this machine (step_up), or list them
  version                   the version and commit this binary was built from
  help                      this text

"countersign <command> -h" lists the command's flags.`

// Exit codes.
const (
	exitOK    = 0
	exitError = 1
	exitUsage = 2
)

// Main runs one command line and returns the exit code.
func Main(ctx context.Context, args []string, env Env) int {
	if len(args) == 0 {
		fmt.Fprintln(env.Stderr, env.named(usage))
		return exitUsage
	}
	cmds := map[string]func(context.Context, []string, Env) int{
		"init":     runInit,
		"run":      runBot,
		"pair":     runPair,
		"console":  runConsole,
		"demo":     runDemo,
		"ops":      runOps,
		"policies": runPolicies,
		"vault":    runVault,
		"mcp":      runMCP,
		"migrate":  runMigrate,
		"audit":    runAudit,
		"version":  runVersion,
		"backup":   runBackup,
		"approver": runApprover,
	}
	if cmd, ok := cmds[args[0]]; ok {
		return cmd(ctx, args[1:], env)
	}
	if args[0] == "--version" || args[0] == "-version" { // as most programs answer it
		return runVersion(ctx, args[1:], env)
	}
	if args[0] == "help" || args[0] == "-h" || args[0] == "--help" {
		if code := checkOperands(env, env.program()+" "+args[0], "countersign help", args[1:]); code >= 0 {
			return code
		}
		fmt.Fprintln(env.Stdout, env.named(usage))
		return exitOK
	}
	fmt.Fprintf(env.Stderr, "%s: unknown command %q\n%s\n", env.program(), args[0], env.named(usage))
	return exitUsage
}
