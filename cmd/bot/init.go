package main

import (
	"bytes"
	"context"
	"errors"
	"flag"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"runtime"
	"strconv"

	"github.com/countersign/countersign"
	"github.com/countersign/countersign/policy"
	"github.com/countersign/countersign/telegram"
)

const initUse = "countersign init [-data DIR] [-policies FILE] [-user ID]"

// runInit is "countersign init": what a first bot needs before countersign run. It writes the
// default policy where none is (an existing one is kept, never overwritten),
// makes the data folder as the bot makes it, checks TELEGRAM_BOT_TOKEN with getMe
// (its shape first, so that a malformed one never reaches the network), and
// prints the next command. Every step says what it did; it exits 1 when a step
// leaves something for the person to do first.
func runInit(ctx context.Context, args []string, env Env) int {
	var cfg Config
	fs := flag.NewFlagSet("countersign init", flag.ContinueOnError)
	fs.SetOutput(env.Stderr)
	fs.StringVar(&cfg.DataDir, "data", "./data", "data folder to make: the journal (journal.db) and the vault")
	fs.StringVar(&cfg.Policies, "policies", "./policies.yaml", "policy file to write, unless it exists")
	user := fs.Int64("user", 0, "your Telegram user id: the operator and approver of the policy this writes")
	if code := parseArgs(fs, args, env, initUse); code >= 0 {
		return code
	}
	if *user < 0 {
		return usageError(env, initUse, "countersign init: -user: a Telegram user id is a positive number")
	}
	out := env.Stdout
	fail := func(err error) int {
		fmt.Fprintln(env.Stderr, env.program()+" init:", err)
		return exitError
	}
	created, err := writePolicy(cfg.Policies, policy.UserID(*user))
	if err != nil {
		return fail(err)
	}
	switch {
	case created:
		fmt.Fprintf(out, "policy: wrote %s, the default policy (countersign policies check validates it after an edit)\n", cfg.Policies)
	case *user != 0:
		fmt.Fprintf(out, "policy: kept %s, which exists; -user is not written into it: add %d to access.operators and access.approvers there\n", cfg.Policies, *user)
	default:
		fmt.Fprintf(out, "policy: kept %s, which exists\n", cfg.Policies)
	}
	p, err := policy.Load(cfg.Policies)
	if err != nil {
		return fail(fmt.Errorf("%w (countersign policies check -policies %s lists every error)", err, cfg.Policies))
	}
	if err := p.ApplyEnv(env.Getenv); err != nil {
		return fail(err)
	}
	if err := initDataFolder(env, cfg.DataDir); err != nil {
		return fail(err)
	}
	token, err := botToken(env)
	if err != nil {
		fmt.Fprintln(out, "token: not checked")
		return fail(fmt.Errorf("%w; then run countersign init again to check it", err))
	}
	me, err := telegram.Me(ctx, token, env.Getenv("TELEGRAM_API_URL"))
	if err != nil {
		return fail(fmt.Errorf("token: %w", err))
	}
	fmt.Fprintf(out, "token: Telegram knows it: the bot is @%s (id %d)\n", me.Username, me.ID)
	return nextStep(env, cfg, p, me.Username)
}

// writePolicy writes the default policy to path, with user (when not 0) as its
// operator and approver, unless a file is there already: it reports whether it
// wrote one. The file is made 0600 and never replaced, even by a writer racing
// this one.
func writePolicy(path string, user policy.UserID) (bool, error) {
	text, err := policyFor(user)
	if err != nil {
		return false, err
	}
	return writePolicyText(path, text)
}

// policyFor is the default policy with user as its one operator and approver
// (none for 0).
func policyFor(user policy.UserID) ([]byte, error) {
	text := countersign.DefaultPolicy
	if user != 0 {
		const none = "access:\n  operators: []\n  approvers: []\n"
		if !bytes.Contains(text, []byte(none)) {
			return nil, errors.New("policy: the default policy has no empty access lists to put -user in")
		}
		id := strconv.FormatInt(int64(user), 10)
		text = bytes.Replace(text, []byte(none), []byte("access:\n  operators: ["+id+"]\n  approvers: ["+id+"]\n"), 1)
	}
	return text, nil
}

// writePolicyText writes text as the policy file at path, unless one is there
// (false).
func writePolicyText(path string, text []byte) (bool, error) {
	if err := os.MkdirAll(filepath.Dir(path), 0o700); err != nil {
		return false, fmt.Errorf("policy: %w", err)
	}
	f, err := os.OpenFile(path, os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o600)
	if errors.Is(err, fs.ErrExist) {
		return false, nil
	}
	if err != nil {
		return false, fmt.Errorf("policy: %w", err)
	}
	if _, err := f.Write(text); err != nil {
		f.Close()
		os.Remove(path) // half a policy would be kept by the next run
		return false, fmt.Errorf("policy: %w", err)
	}
	if err := f.Close(); err != nil {
		os.Remove(path)
		return false, fmt.Errorf("policy: %w", err)
	}
	return true, nil
}

// initDataFolder makes the data folder 0700, as every command that opens it
// does, or says that it is kept, with the chmod that closes it to other users
// when it is open to them (see warnOpenFolders).
func initDataFolder(env Env, dir string) error {
	fi, err := os.Stat(dir)
	switch {
	case errors.Is(err, fs.ErrNotExist):
		if err := os.MkdirAll(dir, 0o700); err != nil {
			return fmt.Errorf("data folder: %w", err)
		}
		fmt.Fprintf(env.Stdout, "data folder: made %s, readable by you alone (the journal and the vault hold message text)\n", dir)
		return nil
	case err != nil:
		return fmt.Errorf("data folder: %w", err)
	case !fi.IsDir():
		return fmt.Errorf("data folder: %s is not a folder", dir)
	}
	fmt.Fprintf(env.Stdout, "data folder: kept %s, which exists\n", dir)
	if runtime.GOOS != "windows" && fi.Mode().Perm()&0o077 != 0 {
		fmt.Fprintf(env.Stdout, "data folder: %s is open to other users (%04o), and the journal and the vault hold message text: chmod 700 %s\n",
			dir, fi.Mode().Perm(), dir)
	}
	return nil
}

// nextStep prints the command that starts the bot, and what to set first when
// nobody could use it yet.
func nextStep(env Env, cfg Config, p *policy.Policy, bot string) int {
	run := "countersign run"
	if filepath.Clean(cfg.DataDir) != "data" {
		run += " -data " + cfg.DataDir
	}
	if filepath.Clean(cfg.Policies) != "policies.yaml" {
		run += " -policies " + cfg.Policies
	}
	out := env.Stdout
	if len(p.Access.Operators) == 0 {
		fmt.Fprintf(out, "\nNext, with TELEGRAM_BOT_TOKEN set as it is here:\n\n  %s\n\nthen send /start to @%s in a private chat in Telegram: with no operator yet, "+
			"it answers with a one-time code, and\n\n  %s <that code>\n\nhere makes you its operator and approver. (Or put your Telegram user id in access.operators "+
			"and access.approvers of %s, or run countersign init -user ID on a new policy file.)\n", run, bot, pairCommand(cfg), cfg.Policies)
		return exitOK
	}
	if len(p.Access.Approvers) == 0 {
		fmt.Fprintf(out, "access: nobody may approve yet: put your Telegram user id in access.approvers of %s\n", cfg.Policies)
	}
	fmt.Fprintf(out, "\nNext, with TELEGRAM_BOT_TOKEN set as it is here:\n\n  %s\n\nthen open a private chat with @%s in Telegram and send /help.\n", run, bot)
	return exitOK
}
