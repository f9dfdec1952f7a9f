//go:build unix

package main

import (
	"database/sql"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"

	"github.com/countersign/countersign/journal"
)

// countersign migrate refuses to migrate a SQLite journal that a bot is still
// sending from, names the bot's process and says what to do; once the bot
// has stopped, it migrates.
func TestMigrateWaitsForTheRunningBotToStop(t *testing.T) {
	data := t.TempDir()
	file := filepath.Join(data, "journal.db")
	db, err := sql.Open("sqlite3", file)
	if err != nil {
		t.Fatal(err)
	}
	all := journal.Migrations(file)
	for _, name := range all[:4] {
		src, err := os.ReadFile(filepath.Join("..", "..", "journal", "migrations", name))
		if err != nil {
			t.Fatal(err)
		}
		if _, err := db.Exec(string(src)); err != nil {
			t.Fatalf("%s: %v", name, err)
		}
	}
	if _, err := db.Exec("PRAGMA user_version = 4"); err != nil {
		t.Fatal(err)
	}
	db.Close()
	lock, err := os.OpenFile(file+".telegram.owner", os.O_RDWR|os.O_CREATE, 0o600)
	if err != nil {
		t.Fatal(err)
	}
	defer lock.Close()
	if err := syscall.Flock(int(lock.Fd()), syscall.LOCK_EX|syscall.LOCK_NB); err != nil {
		t.Skipf("no advisory lock here: %v", err)
	}
	if _, err := lock.WriteString("4242\n"); err != nil {
		t.Fatal(err)
	}
	r := runMain(t, "", nil, "migrate", "-data", data)
	want := "countersign migrate: journal: open " + file + ": schema version 4, this binary's "
	if r.code != 1 || !strings.Contains(r.stderr, want) || !strings.Contains(r.stderr, "process 4242 sends telegram operations from it") || !strings.Contains(r.stderr, "stop that process, then run `countersign migrate`") {
		t.Fatalf("migrate under a running bot: exit %d %q; want 1 naming it and what to do", r.code, r.stderr)
	}
	lock.Close()
	if r := runMain(t, "", nil, "migrate", "-data", data); r.code != 0 || !strings.Contains(r.stdout, "applied "+strings.Join(all[4:], ", ")) {
		t.Errorf("migrate once the bot stopped: exit %d\n%s%s", r.code, r.stdout, r.stderr)
	}
}
