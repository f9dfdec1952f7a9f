package main

import (
	"context"
	"fmt"
	"strings"

	"github.com/countersign/countersign/journal"
)

// runMigrate is "countersign migrate": it brings the journal's schema up to date, as
// every command's open does, and says what it did; with -check it only says
// whether migrations are pending (exit 1 when some are), changing nothing. It
// names a PostgreSQL journal by host and database, never by its URL.
func runMigrate(ctx context.Context, args []string, env Env) int {
	var cfg Config
	fs := folderFlags("migrate", env, &cfg, "journal")
	check := fs.Bool("check", false, "only report whether migrations are pending (exit 1 if any); apply nothing")
	if code := parseArgs(fs, args, env, "countersign migrate [-data DIR | -journal URL] [-check]"); code >= 0 {
		return code
	}
	name := cfg.journalName()
	where := name
	if journal.IsPostgres(name) {
		where = journal.Where(name)
	}
	if *check {
		return checkMigrations(ctx, name, where, env)
	}
	j, err := openJournal(ctx, cfg)
	if err != nil {
		fmt.Fprintln(env.Stderr, env.program()+" migrate:", err)
		return exitError
	}
	defer j.Close()
	version, err := j.SchemaVersion(ctx)
	if err != nil {
		fmt.Fprintln(env.Stderr, env.program()+" migrate:", err)
		return exitError
	}
	if applied := j.Migrated(); len(applied) > 0 {
		fmt.Fprintf(env.Stdout, "journal at %s: applied %s; schema version %d\n", where, strings.Join(applied, ", "), version)
		return exitOK
	}
	fmt.Fprintf(env.Stdout, "journal at %s: schema version %d, up to date\n", where, version)
	return exitOK
}

// checkMigrations is "countersign migrate -check".
func checkMigrations(ctx context.Context, name, where string, env Env) int {
	pending, err := journal.PendingMigrations(ctx, name)
	if err != nil {
		fmt.Fprintln(env.Stderr, env.program()+" migrate:", err)
		return exitError
	}
	version := len(journal.Migrations(name)) - len(pending)
	if len(pending) > 0 {
		fmt.Fprintf(env.Stdout, "journal at %s: schema version %d; pending %s\n", where, version, strings.Join(pending, ", "))
		return exitError
	}
	fmt.Fprintf(env.Stdout, "journal at %s: schema version %d, up to date\n", where, version)
	return exitOK
}
