package main

import (
	"errors"
	"flag"
	"fmt"
	"strings"
)

// Every command's line is checked here, the same way: its flags, then exactly the
// operands it takes, then nothing. A command that ignored an argument did
// something else than was asked and said it went well ("countersign policies check
// FILE" checked ./policies.yaml and printed ok), so an argument a command does
// not take, a missing one, and a subcommand that does not exist are usage errors:
// exit 2, a message naming the argument, and the command's usage.

// parseArgs parses args with fs, whose name is the command's ("countersign ops show"),
// and checks that the operands after the flags are those named in operands:
// "<op_id>" or "delivered|not_delivered" is required, "[FILE]" optional (after
// every required one). use is the command's usage, printed after any usage error
// and by -h with the flags. It returns the exit code to stop with, or -1 to go on
// with fs.Args().
func parseArgs(fs *flag.FlagSet, args []string, env Env, use string, operands ...string) int {
	fs.Usage = func() {
		fmt.Fprintln(fs.Output(), usageOf(env.named(use)))
		fs.PrintDefaults()
	}
	err := fs.Parse(args)
	switch {
	case errors.Is(err, flag.ErrHelp):
		return exitOK
	case err != nil:
		return exitUsage // the flag package said which flag, with the usage
	}
	return checkOperands(env, fs.Name(), use, fs.Args(), operands...)
}

// checkOperands is parseArgs's check of the operands, for a command without flags.
func checkOperands(env Env, name, use string, got []string, operands ...string) int {
	name = env.named(name)
	required := 0
	for _, o := range operands {
		if !strings.HasPrefix(o, "[") {
			required++
		}
	}
	switch {
	case len(got) > len(operands):
		extra := got[len(operands)]
		if strings.HasPrefix(extra, "-") {
			return usageError(env, use, "%s: unexpected argument %q (flags go before the arguments)", name, extra)
		}
		return usageError(env, use, "%s: unexpected argument %q", name, extra)
	case len(got) < required:
		return usageError(env, use, "%s: missing %s", name, operands[len(got)])
	}
	return -1
}

// subcommand returns the subcommand args begin with, one of subs, or the exit
// code of the usage error when there is none or it is not one of them.
func subcommand(env Env, name, use string, args []string, subs ...string) (string, int) {
	name = env.named(name)
	if len(args) == 0 || strings.HasPrefix(args[0], "-") && args[0] != "-h" && args[0] != "-help" && args[0] != "--help" {
		return "", usageError(env, use, "%s: missing subcommand (%s)", name, strings.Join(subs, ", "))
	}
	for _, s := range subs {
		if args[0] == s {
			return s, -1
		}
	}
	if args[0] == "-h" || args[0] == "-help" || args[0] == "--help" {
		fmt.Fprintln(env.Stdout, usageOf(env.named(use)))
		return "", exitOK
	}
	return "", usageError(env, use, "%s: unknown subcommand %q (%s)", name, args[0], strings.Join(subs, ", "))
}

// usageError says what is wrong with a command line, then the command's usage,
// on stderr, and returns exitUsage.
func usageError(env Env, use, format string, args ...any) int {
	fmt.Fprintf(env.Stderr, format+"\n", args...)
	fmt.Fprintln(env.Stderr, usageOf(env.named(use)))
	return exitUsage
}

// usageOf is a command's usage lines as printed: "usage: " before the first,
// the others lined up under it.
func usageOf(use string) string {
	return "usage: " + strings.ReplaceAll(strings.TrimSpace(use), "\n", "\n       ")
}
