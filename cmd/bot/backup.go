package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"strings"

	"github.com/countersign/countersign/journal"
	"github.com/countersign/countersign/vault"
)

// runBackup is "countersign backup -to DIR": a copy of the data folder a stopped or a
// running bot can be restored from. The journal is copied consistently while
// in use (journal.Backup); the vault's notes and the stored files are copied
// file by file after it, so the copy holds every note and file the journal's
// copy names (a note written meanwhile is there too, and the next start's
// reconcile matches notes and journal). Restore: stop the bot, put the copy's
// contents in an empty data folder, start it.
func runBackup(ctx context.Context, args []string, env Env) int {
	var cfg Config
	fs := dataFlags("backup", env, &cfg)
	to := fs.String("to", "", "the new folder to write the backup in (it must not exist)")
	if code := parseArgs(fs, args, env, "countersign backup -to DIR [-data DIR] [-vault DIR]"); code >= 0 {
		return code
	}
	if *to == "" {
		fmt.Fprintln(env.Stderr, env.program()+" backup: -to DIR is required: the new folder to write the backup in")
		return exitUsage
	}
	if journal.IsPostgres(cfg.journalName()) {
		fmt.Fprintf(env.Stderr, env.program()+" backup: the journal is on PostgreSQL (%s): back it up with pg_dump or the server's backups, and copy the vault (%s) beside it\n",
			journal.Where(cfg.journalName()), cfg.vaultDir())
		return exitError
	}
	if _, err := os.Stat(cfg.journalName()); err != nil {
		fmt.Fprintf(env.Stderr, env.program()+" backup: no journal at %s: is -data the bot's data folder?\n", cfg.journalName())
		return exitError
	}
	if err := os.Mkdir(*to, 0o700); err != nil {
		fmt.Fprintf(env.Stderr, env.program()+" backup: %v (the backup goes in a new folder)\n", err)
		return exitError
	}
	n, err := backup(ctx, cfg, *to)
	if err != nil {
		fmt.Fprintf(env.Stderr, env.program()+" backup: %v; %s is incomplete: remove it\n", err, *to)
		return exitError
	}
	fmt.Fprintf(env.Stdout, "backup in %s: the journal, the vault (%d note(s)), %d stored file(s) to send, and the bot's other files (access lists, paired operator).\n"+
		"To restore: stop the bot, copy the contents of %s into an empty data folder, start it (countersign audit verify checks the journal).\n",
		*to, n.notes, n.files, *to)
	return exitOK
}

type copied struct{ notes, files int }

// backup copies the data folder to the new folder to: the journal consistently
// (journal.Backup), then every other file the bot keeps there, whatever its
// name (the vault's notes, the stored files, the access record, the paired
// operator, the agent CLIs' sessions), so that a file the bot begins to keep
// is backed up without a change here. Left out: the journal's own files beside
// it (its write-ahead log, its locks), which the consistent copy replaces, and
// the vault's lock. A vault outside the data folder (-vault) goes to vault.
func backup(ctx context.Context, cfg Config, to string) (copied, error) {
	var n copied
	j, err := openJournal(ctx, cfg)
	if err != nil {
		return n, err
	}
	err = j.Backup(ctx, filepath.Join(to, "journal.db"))
	j.Close()
	if err != nil {
		return n, err
	}
	journalFiles := filepath.Base(cfg.journalName())
	count := func(rel string) {
		switch {
		case strings.HasPrefix(rel, "vault"+string(filepath.Separator)) && strings.HasSuffix(rel, ".md"):
			n.notes++
		case strings.HasPrefix(rel, "files"+string(filepath.Separator)):
			n.files++
		}
	}
	vaultInside := filepath.Clean(cfg.vaultDir()) == filepath.Join(cfg.DataDir, "vault")
	self := "" // the backup's own folder, when it is made inside the data folder
	if abs, err := filepath.Abs(to); err == nil {
		if data, err := filepath.Abs(cfg.DataDir); err == nil {
			self, _ = filepath.Rel(data, abs)
		}
	}
	err = copyTree(cfg.DataDir, to, func(rel string) bool {
		switch {
		case rel == self:
			return false
		case filepath.Dir(rel) == "." && strings.HasPrefix(rel, journalFiles):
			return false // the journal, copied above, and its side files
		case filepath.Base(rel) == vault.LockName:
			return false
		case !vaultInside && (rel == "vault" || strings.HasPrefix(rel, "vault"+string(filepath.Separator))):
			return false // not this bot's vault: -vault names another
		}
		return true
	}, count)
	if err != nil {
		return n, fmt.Errorf("data folder: %w", err)
	}
	if !vaultInside {
		err = copyTree(cfg.vaultDir(), filepath.Join(to, "vault"), func(rel string) bool {
			return filepath.Base(rel) != vault.LockName
		}, func(rel string) { count(filepath.Join("vault", rel)) })
		if err != nil {
			return n, fmt.Errorf("vault: %w", err)
		}
	}
	return n, nil
}

// copyTree copies the regular files under src that keep says to keep (by their
// path relative to src) to dst, folders 0700, files 0600, each synced, and
// calls copied with each file's path; a missing src copies none.
func copyTree(src, dst string, keep func(rel string) bool, copied func(rel string)) error {
	return filepath.WalkDir(src, func(path string, d fs.DirEntry, err error) error {
		if errors.Is(err, fs.ErrNotExist) && path == src {
			return fs.SkipAll
		}
		if err != nil {
			return err
		}
		rel, err := filepath.Rel(src, path)
		if err != nil {
			return err
		}
		target := filepath.Join(dst, rel)
		switch {
		case rel == ".":
			return os.MkdirAll(target, 0o700)
		case !keep(rel):
			if d.IsDir() {
				return fs.SkipDir
			}
			return nil
		case d.IsDir():
			return os.MkdirAll(target, 0o700)
		case !d.Type().IsRegular():
			return nil // a symlink or a socket is not the bot's
		}
		ok, err := copyFile(path, target)
		if ok {
			copied(rel)
		}
		if errors.Is(err, fs.ErrNotExist) {
			return nil // removed meanwhile (a note collected)
		}
		return err
	})
}

// copyFile copies src to the new file dst, 0600 and synced.
func copyFile(src, dst string) (bool, error) {
	in, err := os.Open(src)
	if err != nil {
		return false, err
	}
	defer in.Close()
	out, err := os.OpenFile(dst, os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o600)
	if err != nil {
		return false, err
	}
	if _, err := io.Copy(out, in); err != nil {
		out.Close()
		return false, err
	}
	if err := out.Sync(); err != nil {
		out.Close()
		return false, err
	}
	return true, out.Close()
}
