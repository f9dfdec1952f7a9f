package journal_test

import (
	"context"
	"database/sql"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/countersign/countersign/internal/journaltest"
	"github.com/countersign/countersign/journal"
)

// A new journal has every migration pending, and looking creates nothing; Open
// applies them and says which; after it nothing is pending, and a second Open
// applies nothing.
func TestMigrationsSayWhatOpenApplied(t *testing.T) {
	t.Parallel()
	forEachBackend(t, func(t *testing.T, name string) {
		ctx := context.Background()
		all := journal.Migrations(name)
		if len(all) == 0 {
			t.Fatal("no migrations")
		}
		pending, err := journal.PendingMigrations(ctx, name)
		if err != nil || !slices.Equal(pending, all) {
			t.Fatalf("PendingMigrations of a new journal = %v, %v; want %v", pending, err, all)
		}
		if !journal.IsPostgres(name) {
			if _, err := os.Stat(name); err == nil {
				t.Error("PendingMigrations created the journal file")
			}
		}
		j := open(t, name, time.Now)
		if got := j.Migrated(); !slices.Equal(got, all) {
			t.Errorf("Migrated = %v, want %v", got, all)
		}
		if v, err := j.SchemaVersion(ctx); err != nil || v != len(all) {
			t.Errorf("SchemaVersion = %d, %v; want %d", v, err, len(all))
		}
		if pending, err := journal.PendingMigrations(ctx, name); err != nil || len(pending) != 0 {
			t.Errorf("PendingMigrations after Open = %v, %v; want none", pending, err)
		}
		if again := open(t, name, time.Now); len(again.Migrated()) != 0 {
			t.Errorf("a second Open applied %v, want nothing", again.Migrated())
		}
	})
}

// SQLite only (PostgreSQL has one migration): a journal left at schema version 4
// has the later ones pending, and Open applies exactly those.
func TestMigrationsPendingOnAnOlderJournal(t *testing.T) {
	t.Parallel()
	path := filepath.Join(t.TempDir(), "j.db")
	ctx := context.Background()
	left := journaltest.Older(t, path, 4)
	pending, err := journal.PendingMigrations(ctx, path)
	if err != nil || !slices.Equal(pending, left) {
		t.Fatalf("PendingMigrations = %v, %v; want %v", pending, err, left)
	}
	if got := open(t, path, time.Now).Migrated(); !slices.Equal(got, left) {
		t.Errorf("Migrated = %v, want %v", got, left)
	}
}

// SQLite only: a schema newer than the binary is refused by the look as by Open.
func TestPendingMigrationsRefusesANewerSchema(t *testing.T) {
	t.Parallel()
	path := filepath.Join(t.TempDir(), "j.db")
	open(t, path, time.Now).Close()
	db, err := sql.Open("sqlite3", path)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := db.Exec("PRAGMA user_version = 99"); err != nil {
		t.Fatal(err)
	}
	db.Close()
	if _, err := journal.PendingMigrations(context.Background(), path); err == nil || !strings.Contains(err.Error(), "newer than this binary") {
		t.Errorf("PendingMigrations of version 99 = %v, want a refusal", err)
	}
}

func TestCountByState(t *testing.T) {
	t.Parallel()
	forEachBackend(t, func(t *testing.T, name string) {
		ctx := context.Background()
		j := open(t, name, time.Now)
		if got, err := j.CountByState(ctx); err != nil || len(got) != 0 {
			t.Errorf("CountByState of an empty journal = %v, %v; want nothing", got, err)
		}
		for range 3 {
			newOp(t, j)
		}
		_, op := newOp(t, j)
		if err := j.Move(ctx, op.ID, journal.Move{From: journal.Prepared, To: journal.Verified, Reason: "checked"}); err != nil {
			t.Fatal(err)
		}
		_, op = newOp(t, j)
		if err := j.Move(ctx, op.ID, journal.Move{From: journal.Prepared, To: journal.Cancelled, Reason: "withdrawn"}); err != nil {
			t.Fatal(err)
		}
		got, err := j.CountByState(ctx)
		want := map[journal.State]int{journal.Prepared: 3, journal.Verified: 1, journal.Cancelled: 1}
		if err != nil || !maps.Equal(got, want) {
			t.Errorf("CountByState = %v, %v; want %v", got, err, want)
		}
	})
}

func TestPing(t *testing.T) {
	t.Parallel()
	forEachBackend(t, func(t *testing.T, name string) {
		j := open(t, name, time.Now)
		if err := j.Ping(context.Background()); err != nil {
			t.Errorf("Ping = %v", err)
		}
		j.Close()
		if err := j.Ping(context.Background()); err == nil {
			t.Error("Ping of a closed journal = nil, want an error")
		}
	})
}

func TestStatesAreEveryState(t *testing.T) {
	t.Parallel()
	got := journal.States()
	for _, s := range []journal.State{journal.Prepared, journal.AwaitingApproval, journal.Committing, journal.Unknown, journal.Committed,
		journal.Rejected, journal.Expired, journal.NotDelivered, journal.Cancelled, journal.Failed} {
		if !slices.Contains(got, s) {
			t.Errorf("States() = %v lacks %s", got, s)
		}
	}
	if len(got) != 13 || !slices.IsSorted(got) {
		t.Errorf("States() = %v, want the 13 states sorted", got)
	}
}
