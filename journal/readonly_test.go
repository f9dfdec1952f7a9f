package journal_test

import (
	"context"
	"os"
	"path/filepath"
	"testing"

	"github.com/countersign/countersign/journal"
)

// A journal opened as a read-only snapshot reads what was written, makes no
// file beside it, and refuses every write.
func TestAReadOnlySnapshotReadsAndWritesNothing(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	dir := t.TempDir()
	file := filepath.Join(dir, "journal.db")
	j, err := journal.Open(ctx, file)
	if err != nil {
		t.Fatal(err)
	}
	task, err := j.CreateTask(ctx, journal.Task{Summary: "kept"})
	if err != nil {
		t.Fatal(err)
	}
	j.Close()
	before, _ := os.ReadDir(dir)

	ro, err := journal.Open(ctx, file, journal.ReadOnlySnapshot())
	if err != nil {
		t.Fatal(err)
	}
	defer ro.Close()
	if got, err := ro.Task(ctx, task.ID); err != nil || got.Summary != "kept" {
		t.Errorf("Task = %+v, %v; want the task written before", got, err)
	}
	if _, err := ro.CreateTask(ctx, journal.Task{Summary: "new"}); err == nil {
		t.Error("a write through a read-only snapshot succeeded")
	}
	if after, _ := os.ReadDir(dir); len(after) != len(before) {
		t.Errorf("the snapshot made files beside the journal: %d then %d", len(before), len(after))
	}
	if _, err := journal.Open(ctx, filepath.Join(dir, "none.db"), journal.ReadOnlySnapshot()); err == nil {
		t.Error("a snapshot of a journal that does not exist opened")
	}
}
