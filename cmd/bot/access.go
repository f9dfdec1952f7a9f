package main

import (
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"slices"

	"github.com/countersign/countersign/mcp"
	"github.com/countersign/countersign/pairing"
	"github.com/countersign/countersign/policy"
)

// The access lists a countersign run uses are recorded in its data folder, so that a
// countersign mcp an agent starts beside it (with the agent's environment, not the
// shell's BOT_OPERATORS and BOT_APPROVERS) asks the same people: the bot shows
// the cards, and a tap counts only from someone both lists name.

// accessFile is the record's name in the data folder.
const accessFile = "access.json"

// accessRecord is what a countersign run writes of its access lists: user ids only.
type accessRecord struct {
	Operators []policy.UserID `json:"operators"`
	Approvers []policy.UserID `json:"approvers"`
}

// recordAccess writes the access lists of p in the data folder, replacing the
// record of an earlier run whole (a temporary file renamed over it), 0600.
func recordAccess(cfg Config, p *policy.Policy) error {
	b, err := json.Marshal(accessRecord{Operators: nonNil(p.Access.Operators), Approvers: nonNil(p.Access.Approvers)})
	if err != nil {
		return fmt.Errorf("access record: %w", err)
	}
	if err := os.MkdirAll(cfg.DataDir, 0o700); err != nil {
		return fmt.Errorf("access record: %w", err)
	}
	f, err := os.CreateTemp(cfg.DataDir, accessFile+".*")
	if err != nil {
		return fmt.Errorf("access record: %w", err)
	}
	defer os.Remove(f.Name()) // after the rename, there is nothing left to remove
	if _, err := f.Write(append(b, '\n')); err != nil {
		f.Close()
		return fmt.Errorf("access record: %w", err)
	}
	if err := f.Close(); err != nil {
		return fmt.Errorf("access record: %w", err)
	}
	if err := os.Rename(f.Name(), filepath.Join(cfg.DataDir, accessFile)); err != nil {
		return fmt.Errorf("access record: %w", err)
	}
	return nil
}

func nonNil(ids []policy.UserID) []policy.UserID {
	if ids == nil {
		return []policy.UserID{}
	}
	return ids
}

// runningAccess puts in p the access lists the countersign run on cfg's data folder
// recorded, each where the environment sets none (BOT_OPERATORS, BOT_APPROVERS
// win, as they do over the policy). It reports whether a record was found.
func runningAccess(cfg Config, p *policy.Policy, getenv func(string) string) (bool, error) {
	b, err := os.ReadFile(filepath.Join(cfg.DataDir, accessFile))
	if errors.Is(err, fs.ErrNotExist) {
		return false, nil
	}
	if err != nil {
		return false, fmt.Errorf("access record: %w", err)
	}
	var r accessRecord
	if err := json.Unmarshal(b, &r); err != nil {
		return false, fmt.Errorf("access record %s: %w (countersign run writes it again at start)", filepath.Join(cfg.DataDir, accessFile), err)
	}
	if getenv("BOT_OPERATORS") == "" {
		p.Access.Operators = r.Operators
	}
	if getenv("BOT_APPROVERS") == "" {
		p.Access.Approvers = r.Approvers
	}
	// A record written before a pairing that no countersign run has recorded since (the
	// bot stopped before countersign pair) still lets the person paired in.
	return true, withPaired(cfg, p)
}

// withPaired adds the person paired on cfg's data folder (countersign pair), if any, to
// p's operators and approvers, whatever lists the policy or the environment
// gave: a pairing stands until its record, DATA/paired.json, is removed. So
// every command on the data folder (countersign run, console, mcp) asks the same
// people.
func withPaired(cfg Config, p *policy.Policy) error {
	who, ok, err := pairing.Load(cfg.DataDir)
	if err != nil || !ok {
		return err
	}
	a := &p.Access
	if !a.IsOperator(who.User) {
		a.Operators = append(slices.Clip(a.Operators), who.User) // never into a list another policy shares
	}
	if !a.IsApprover(who.User) {
		a.Approvers = append(slices.Clip(a.Approvers), who.User)
	}
	return nil
}

// noApprovers refuses to serve commits nobody could approve, saying where the
// approvers go. It is mcp.ErrNoApprovers.
type noApprovers struct{ policy, data string }

func (e noApprovers) Error() string {
	return fmt.Sprintf("no approvers, so every commit would wait for a tap nobody can give: put your Telegram user id in access.approvers of %s "+
		"(countersign init -user ID writes it into a new policy), or set BOT_APPROVERS where countersign run starts on %s (it records its lists there, in %s, for countersign mcp), "+
		"or in this command's environment; or pair: countersign run on %s with no operators gives the first person who writes to the bot a code, and countersign pair confirms it",
		e.policy, e.data, accessFile, e.data)
}

func (noApprovers) Unwrap() error { return mcp.ErrNoApprovers }
