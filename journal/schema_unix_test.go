//go:build unix

package journal_test

import (
	"context"
	"database/sql"
	"errors"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/countersign/countersign/journal"
)

// A journal a live process sends from is not migrated under it: a migration
// holds every write until it ends, and the older bot's writes would fail at
// its busy timeout in the middle of a send. Once the sender has stopped, the
// same open migrates.
func TestAJournalIsNotMigratedUnderARunningSender(t *testing.T) {
	t.Parallel()
	path := filepath.Join(t.TempDir(), "j.db")
	db, err := sql.Open("sqlite3", path)
	if err != nil {
		t.Fatal(err)
	}
	all := journal.Migrations(path)
	for _, name := range all[:4] {
		src, err := os.ReadFile(filepath.Join("migrations", name))
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
	// The older bot: it owns sending for telegram, as Own leaves the lock.
	lock, err := os.OpenFile(path+".telegram.owner", os.O_RDWR|os.O_CREATE, 0o600)
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
	_, err = journal.Open(context.Background(), path)
	if !errors.Is(err, journal.ErrOwned) || !strings.Contains(err.Error(), "process 4242 sends telegram") || !strings.Contains(err.Error(), "countersign migrate") {
		t.Fatalf("Open under a running sender = %v, want a refusal naming it and what to do", err)
	}
	if pending, err := journal.PendingMigrations(context.Background(), path); err != nil || !slices.Equal(pending, all[4:]) {
		t.Fatalf("after the refusal, pending %v, %v; want %v (nothing migrated)", pending, err, all[4:])
	}
	lock.Close() // the older bot stops
	if got := open(t, path, time.Now).Migrated(); !slices.Equal(got, all[4:]) {
		t.Errorf("Migrated once it stopped = %v, want %v", got, all[4:])
	}
}
