//go:build unix

package journal_test

import (
	"context"
	"errors"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/countersign/countersign/internal/journaltest"
	"github.com/countersign/countersign/journal"
)

// A journal a live process sends from is not migrated under it: a migration
// holds every write until it ends, and the older bot's writes would fail at
// its busy timeout in the middle of a send. Once the sender has stopped, the
// same open migrates.
func TestAJournalIsNotMigratedUnderARunningSender(t *testing.T) {
	t.Parallel()
	path := filepath.Join(t.TempDir(), "j.db")
	left := journaltest.Older(t, path, 4)
	stop := journaltest.HoldOwner(t, path, "telegram", 4242) // the older bot
	_, err := journal.Open(context.Background(), path)
	if !errors.Is(err, journal.ErrOwned) || !strings.Contains(err.Error(), "process 4242 sends telegram") || !strings.Contains(err.Error(), "countersign migrate") {
		t.Fatalf("Open under a running sender = %v, want a refusal naming it and what to do", err)
	}
	if pending, err := journal.PendingMigrations(context.Background(), path); err != nil || !slices.Equal(pending, left) {
		t.Fatalf("after the refusal, pending %v, %v; want %v (nothing migrated)", pending, err, left)
	}
	stop()
	if got := open(t, path, time.Now).Migrated(); !slices.Equal(got, left) {
		t.Errorf("Migrated once it stopped = %v, want %v", got, left)
	}
}
