package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	iofs "io/fs"
	"log/slog"
	"os/user"
	"path/filepath"
	"strconv"
	"time"

	"github.com/countersign/countersign/pairing"
	"github.com/countersign/countersign/policy"
	"github.com/countersign/countersign/telegram"
)

const pairUse = "countersign pair [-data DIR] <code>"

// runPair is "countersign pair CODE": the confirmation, on the bot's machine, of the
// code a bot with no operator gave in Telegram to a person who wrote to it.
// That person becomes operator and approver for every command on the data
// folder, and the bot running on it notices within a second and tells them. A
// wrong, expired or spent code changes nothing and says so (exit 1).
func runPair(_ context.Context, args []string, env Env) int {
	var cfg Config
	fs := flag.NewFlagSet("countersign pair", flag.ContinueOnError)
	fs.SetOutput(env.Stderr)
	fs.StringVar(&cfg.DataDir, "data", "./data", "the data folder of the bot that gave the code")
	if code := parseArgs(fs, args, env, pairUse, "<code>"); code >= 0 {
		return code
	}
	who, err := pairing.Confirm(cfg.DataDir, fs.Arg(0), time.Now())
	if err != nil {
		fmt.Fprintln(env.Stderr, env.program()+" pair:", pairError(err, cfg.DataDir))
		if errors.Is(err, iofs.ErrPermission) {
			fmt.Fprintln(env.Stderr, asOwner(env.program(), cfg.DataDir, fs.Arg(0)))
		}
		return exitError
	}
	fmt.Fprintf(env.Stdout, "paired: user %d%s is now an operator and approver of the bot on %s (remove %s to undo); "+
		"a bot running there tells them in Telegram within a second\n", who.User, nameOf(who), cfg.DataDir, filepath.Join(cfg.DataDir, pairing.PairedFile))
	return exitOK
}

// pairError says why a code was not confirmed, and what to do, in the words of
// someone at the bot's terminal.
func pairError(err error, dir string) string {
	switch {
	case errors.Is(err, pairing.ErrWrongCode):
		return fmt.Sprintf("that is not a pending code on %s; nothing changed (copy the code the bot sent in Telegram, or send it /start for it again)", dir)
	case errors.Is(err, pairing.ErrExpired):
		return fmt.Sprintf("%v; nothing changed: send /start to the bot for a new code", err)
	case errors.Is(err, pairing.ErrNoPending):
		return fmt.Sprintf("no code is pending on %s: start countersign run there with no operators, then send /start to the bot in a private chat (a restart drops the codes given before)", dir)
	case errors.Is(err, pairing.ErrPaired):
		return fmt.Sprintf("this bot is paired already (%v); nothing changed: add anyone else to access.operators and access.approvers in its policy", err)
	}
	return err.Error()
}

// asOwner is the line that confirms code as the owner of the data folder dir,
// for someone who may not write there: the service's own user, under the
// shipped systemd unit.
func asOwner(program, dir, code string) string {
	who := "the data folder's owner"
	if uid, ok := pairing.FolderOwner(dir); ok {
		who = "#" + strconv.Itoa(uid)
		if u, err := user.LookupId(strconv.Itoa(uid)); err == nil {
			who = u.Username
		}
	}
	return fmt.Sprintf("run it as the user who owns %s:\n  sudo -u %s %s pair -data %s %s", dir, who, program, dir, code)
}

func nameOf(p pairing.Paired) string {
	if p.Name == "" {
		return ""
	}
	return " (" + p.Name + ")"
}

// pairingDesk is the running bot's pairing desk, logging what the person at its
// terminal needs to know: that someone asked, and how to confirm, never the
// code (only the person who asked and whoever they show it to may pair).
type pairingDesk struct {
	*pairing.Desk
	logger  *slog.Logger
	confirm string // the command that confirms, without its code
}

var _ telegram.Pairing = pairingDesk{}

// openPairing opens the pairing desk of a countersign run on cfg's data folder.
func openPairing(cfg Config, logger *slog.Logger) (pairingDesk, error) {
	d, err := pairing.Open(cfg.DataDir, pairing.Options{})
	if err != nil {
		return pairingDesk{}, err
	}
	return pairingDesk{Desk: d, logger: logger, confirm: pairCommand(cfg)}, nil
}

// pairCommand is the command that confirms a code on cfg's data folder, without
// the code.
func pairCommand(cfg Config) string {
	if filepath.Clean(cfg.DataDir) == "data" {
		return "countersign pair"
	}
	return "countersign pair -data " + cfg.DataDir
}

func (d pairingDesk) Offer(user policy.UserID, name string) (pairing.Offer, error) {
	o, err := d.Desk.Offer(user, name)
	if err == nil && o.Fresh {
		d.logger.Info(fmt.Sprintf("pairing pending: to make this person operator and approver, run %s <the code they got in Telegram>", d.confirm),
			"user", user, "name", name, "expires", o.Expires.UTC().Format(time.RFC3339))
	}
	return o, err
}

func (d pairingDesk) Wait(ctx context.Context) (pairing.Paired, error) {
	who, err := d.Desk.Wait(ctx)
	if err == nil {
		d.logger.Info("paired: this person is now an operator and approver", "user", who.User, "name", who.Name)
	}
	return who, err
}
