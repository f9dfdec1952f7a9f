package main

import (
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"strings"
	"time"

	"github.com/countersign/countersign/operator"
	"github.com/countersign/countersign/policy"
	"github.com/countersign/countersign/vault"
)

// runVault is "countersign vault list|show|resolve|gc": the follow-up session's tools.
// Exit codes: 0 ok, 1 error (an unknown id, a broken note, a failed write), 2 usage.
func runVault(ctx context.Context, args []string, env Env) int {
	uses := map[string]string{
		"list":    "countersign vault list    [-data DIR] [-vault DIR] [-json] [-unresolved] [-target CHAT] [-older-than 24h]",
		"show":    "countersign vault show    [-data DIR] [-vault DIR] [-json] <op_id>",
		"resolve": "countersign vault resolve [-data DIR | -journal URL] [-vault DIR] [-policies FILE] [-by NAME] <op_id> delivered|not_delivered",
		"gc":      "countersign vault gc      [-data DIR] [-vault DIR] [-json]",
	}
	sub, code := subcommand(env, "countersign vault", strings.Join([]string{uses["list"], uses["show"], uses["resolve"], uses["gc"]}, "\n"),
		args, "list", "show", "resolve", "gc")
	if code >= 0 {
		return code
	}
	var cfg Config
	// Each subcommand takes its own flags, those of its usage line.
	asJSON, unresolved, target, older, by := new(bool), new(bool), new(string), new(time.Duration), new(string)
	*by = "cli"
	var fs *flag.FlagSet
	switch sub {
	case "resolve":
		fs = folderFlags("vault "+sub, env, &cfg, "journal", "vault", "policies")
		fs.StringVar(by, "by", "cli", "who verified")
	default:
		fs = folderFlags("vault "+sub, env, &cfg, "vault")
		fs.BoolVar(asJSON, "json", false, "JSON output, one object per line")
	}
	if sub == "list" {
		fs.BoolVar(unresolved, "unresolved", false, "only envelopes still unknown")
		fs.StringVar(target, "target", "", "only envelopes for this chat")
		fs.DurationVar(older, "older-than", 0, "only envelopes created longer ago than this")
	}
	operands := map[string][]string{"show": {"<op_id>"}, "resolve": {"<op_id>", "delivered|not_delivered"}}[sub]
	if code := parseArgs(fs, args[1:], env, uses[sub], operands...); code >= 0 {
		return code
	}
	if answer := fs.Arg(1); sub == "resolve" && answer != "delivered" && answer != "not_delivered" {
		return usageError(env, uses[sub], "countersign vault resolve: %q is neither delivered nor not_delivered", answer)
	}
	if *target != "" {
		// Envelopes name chats as payloads do: +222 is 222, @News_Desk is @news_desk.
		t, err := policy.NormalizeTarget(*target)
		if err != nil {
			return usageError(env, uses[sub], "countersign vault: -target %q is not a chat id or @username", *target)
		}
		*target = t
	}
	v, err := vault.Open(cfg.vaultDir())
	if err != nil {
		fmt.Fprintln(env.Stderr, env.program()+" vault:", err)
		return exitError
	}
	switch sub {
	case "list":
		err = listNotes(v, vault.Filter{Unresolved: *unresolved, Target: *target, OlderThan: *older, Now: time.Now()}, *asJSON, env)
	case "show":
		err = showNote(v, fs.Arg(0), *asJSON, env.Stdout)
	case "resolve":
		err = resolveNote(ctx, cfg, env, fs.Arg(0), fs.Arg(1), *by)
	case "gc":
		err = gcNotes(v, *asJSON, env.Stdout)
	}
	if err != nil {
		fmt.Fprintln(env.Stderr, env.program()+" vault:", err)
		return exitError
	}
	return exitOK
}

func listNotes(v *vault.Vault, f vault.Filter, asJSON bool, env Env) error {
	notes, broken, err := v.List(f)
	if err != nil {
		return err
	}
	for _, b := range broken {
		fmt.Fprintf(env.Stderr, "broken note, skipped: %s: %v\n", b.Path, b.Err)
	}
	if len(notes) == 0 && !asJSON {
		switch {
		case len(broken) > 0:
			fmt.Fprintf(env.Stdout, "no notes listed: the %d above could not be read\n", len(broken))
		case f.Unresolved || f.Target != "" || f.OlderThan > 0:
			fmt.Fprintln(env.Stdout, "no notes that match")
		default:
			fmt.Fprintln(env.Stdout, "no notes in the vault")
		}
		return nil
	}
	enc := json.NewEncoder(env.Stdout)
	for _, n := range notes {
		if asJSON {
			if err := enc.Encode(n); err != nil {
				return err
			}
			continue
		}
		e := n.Envelope
		fmt.Fprintf(env.Stdout, "%s  %-13s %s to %s  %s  %s\n", e.OperationID, e.Status, e.Action, e.Target, e.Created.Format(time.DateTime), n.Path)
	}
	return nil
}

// showNote prints the note as the vault read it: a second read by path could
// follow a link or block on a FIFO put there in between.
func showNote(v *vault.Vault, id string, asJSON bool, w io.Writer) error {
	e, path, data, err := v.GetText(id)
	if err != nil {
		return err
	}
	if asJSON {
		return json.NewEncoder(w).Encode(vault.Note{Envelope: e, Path: path})
	}
	fmt.Fprintf(w, "%s\n\n%s", path, data)
	return nil
}

// resolveNote resolves through the operator, so the journal and the vault agree.
func resolveNote(ctx context.Context, cfg Config, env Env, id, answer, by string) error {
	p, err := loadPolicy(cfg, env)
	if err != nil {
		return err
	}
	j, err := openJournal(ctx, cfg)
	if err != nil {
		return err
	}
	defer j.Close()
	a, err := newApp(cfg, j, p, edge{}, env.Getenv, newLogger(env.Stderr))
	if err != nil {
		return err
	}
	r, err := a.operator.Resolve(ctx, id, answer == "delivered", by)
	if errors.Is(err, operator.ErrNotResolvable) {
		return fmt.Errorf("%s has no unknown outcome to resolve", id)
	}
	if err != nil {
		return err
	}
	fmt.Fprintln(env.Stdout, r.Reason)
	return nil
}

func gcNotes(v *vault.Vault, asJSON bool, w io.Writer) error {
	removed, err := v.GC(time.Now())
	if err == nil && len(removed) == 0 && !asJSON {
		fmt.Fprintln(w, "no notes removed: none is resolved and past its time")
	}
	for _, p := range removed {
		if asJSON {
			json.NewEncoder(w).Encode(map[string]string{"removed": p})
		} else {
			fmt.Fprintln(w, "removed", p)
		}
	}
	return err
}
