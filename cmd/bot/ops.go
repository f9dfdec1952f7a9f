package main

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"slices"
	"strings"
	"time"

	"github.com/countersign/countersign/command"
	"github.com/countersign/countersign/journal"
)

// runOps is "countersign ops list|show": the journal for people and scripts.
func runOps(ctx context.Context, args []string, env Env) int {
	uses := map[string]string{
		"list": "countersign ops list [-data DIR | -journal URL] [-json] [-n N] [-state S]",
		"show": "countersign ops show [-data DIR | -journal URL] [-json] <op_id>",
	}
	sub, code := subcommand(env, "countersign ops", uses["list"]+"\n"+uses["show"], args, "list", "show")
	if code >= 0 {
		return code
	}
	var cfg Config
	fs := folderFlags("ops "+sub, env, &cfg, "journal")
	asJSON := fs.Bool("json", false, "one JSON object per operation")
	limit, state := new(int), new(string)
	*limit = 50
	if sub == "list" {
		fs.IntVar(limit, "n", 50, "at most this many operations, newest first")
		fs.StringVar(state, "state", "", "only operations in this state")
	}
	operands := map[string][]string{"show": {"<op_id>"}}[sub]
	if code := parseArgs(fs, args[1:], env, uses[sub], operands...); code >= 0 {
		return code
	}
	if *state != "" && !slices.Contains(journal.States(), journal.State(*state)) {
		return usageError(env, uses[sub], fmt.Sprintf("%s ops list: no state %q; the states are %s", env.program(), *state, stateNames()))
	}
	if err := checkDataDir(cfg); err != nil {
		fmt.Fprintln(env.Stderr, env.program()+" ops:", err)
		return exitError
	}
	if _, err := os.Stat(cfg.journalName()); err != nil && !journal.IsPostgres(cfg.journalName()) {
		fmt.Fprintf(env.Stderr, env.program()+" ops: no journal in %s (set -data)\n", cfg.DataDir)
		return exitError
	}
	j, err := openToRead(ctx, cfg)
	if err != nil {
		fmt.Fprintln(env.Stderr, env.program()+" ops:", err)
		return exitError
	}
	defer j.Close()
	if sub == "show" {
		err = showOp(ctx, j, fs.Arg(0), *asJSON, env.Stdout)
	} else {
		err = listOps(ctx, j, journal.Filter{Limit: *limit, States: states(*state)}, *asJSON, env.Stdout)
	}
	if err != nil {
		fmt.Fprintln(env.Stderr, env.program()+" ops:", err)
		return exitError
	}
	return exitOK
}

// stateNames are the states, comma-separated, for a usage error.
func stateNames() string {
	all := journal.States()
	names := make([]string, len(all))
	for i, s := range all {
		names[i] = string(s)
	}
	return strings.Join(names, ", ")
}

func states(s string) []journal.State {
	if s == "" {
		return nil
	}
	return []journal.State{journal.State(s)}
}

func listOps(ctx context.Context, j *journal.Journal, f journal.Filter, asJSON bool, w io.Writer) error {
	ops, err := j.Operations(ctx, f)
	if err != nil {
		return err
	}
	if len(ops) == 0 && !asJSON {
		fmt.Fprintln(w, "no operations"+map[bool]string{true: " in that state", false: ""}[len(f.States) > 0])
		return nil
	}
	enc := json.NewEncoder(w)
	for _, op := range ops {
		if asJSON {
			if err := enc.Encode(op.View()); err != nil {
				return err
			}
			continue
		}
		fmt.Fprintln(w, command.Line(op))
	}
	return nil
}

func showOp(ctx context.Context, j *journal.Journal, id string, asJSON bool, w io.Writer) error {
	op, err := j.Operation(ctx, id)
	if err != nil {
		return err
	}
	v := op.View()
	if v.Transitions, err = j.Transitions(ctx, id); err != nil {
		return err
	}
	if v.Attempted, err = j.Attempts(ctx, id); err != nil {
		return err
	}
	if asJSON {
		enc := json.NewEncoder(w)
		enc.SetIndent("", "  ")
		return enc.Encode(v)
	}
	fmt.Fprintf(w, "%s  %s  %s\ntool: %s  task: %s  attempts: %d\ntarget: %s\npayload sha256: %s\n",
		v.ID, v.State, v.Action, v.Tool, v.TaskID, v.Attempts, v.Target, v.PayloadSHA256)
	if v.Result != nil {
		fmt.Fprintf(w, "result: %s, side effect %s, next %s\n", v.Result.Status, v.Result.SideEffect, v.Result.NextAction)
		if v.Result.Reason != "" {
			fmt.Fprintf(w, "  %s\n", v.Result.Reason)
		}
	}
	if v.Envelope != "" {
		fmt.Fprintf(w, "envelope: %s\n", v.Envelope)
	}
	fmt.Fprintf(w, "text:\n%s\ntransitions:\n", v.Text)
	for _, t := range v.Transitions {
		from := string(t.From)
		if from == "" {
			from = "(new)"
		}
		fmt.Fprintf(w, "  %s  %s -> %s  %s\n", t.At.Format(time.RFC3339), from, t.To, t.Reason)
	}
	return nil
}

// openToRead opens the journal for a command that only reads it: as every
// command does, else, when this user may read the file but not write it or its
// folder (a copy on read-only media, another user's journal), as a read-only
// snapshot (journal.ReadOnlySnapshot).
func openToRead(ctx context.Context, cfg Config) (*journal.Journal, error) {
	j, err := openJournal(ctx, cfg)
	if err == nil || journal.IsPostgres(cfg.journalName()) {
		return j, err
	}
	if ro, rerr := journal.Open(ctx, cfg.journalName(), journal.ReadOnlySnapshot()); rerr == nil {
		return ro, nil
	}
	return nil, err
}
