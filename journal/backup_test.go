package journal_test

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"testing"

	"github.com/countersign/countersign/journal"
)

// A backup taken while the journal is in use holds what it held, its audit
// trail verifies, it is private to its owner, and it never overwrites a file.
func TestABackupIsTheJournalAsItWas(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	c := newClock()
	j := open(t, filepath.Join(dir, "j.db"), c.Now)
	lifecycle(t, j, c)
	to := filepath.Join(dir, "backup.db")
	if err := j.Backup(context.Background(), to); err != nil {
		t.Fatal(err)
	}
	newOp(t, j) // after the backup: not in it
	if fi, err := os.Stat(to); err != nil || fi.Mode().Perm() != 0o600 {
		t.Fatalf("backup file: %v, %v; want mode 0600", fi, err)
	}
	b := open(t, to, c.Now)
	want, _ := j.Operations(context.Background(), journal.Filter{})
	got, _ := b.Operations(context.Background(), journal.Filter{})
	if len(got) != len(want)-1 {
		t.Errorf("backup holds %d operations, want %d (the journal's before the last)", len(got), len(want)-1)
	}
	if rep := verify(t, b); rep.Fault != nil {
		t.Errorf("the backup's audit trail: %s", rep.Fault)
	}
	if err := j.Backup(context.Background(), to); !errors.Is(err, os.ErrExist) {
		t.Errorf("a backup over an existing file = %v, want ErrExist", err)
	}
}
