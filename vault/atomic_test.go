package vault

import (
	"bytes"
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/countersign/countersign/envelope"
)

var errCrash = errors.New("crash before rename")

// interruptRename makes every rename fail, as a crash between the temp file's fsync
// and the rename would, and restores os.Rename when the test ends.
func interruptRename(t *testing.T) {
	t.Helper()
	rename = func(string, string) error { return errCrash }
	t.Cleanup(func() { rename = os.Rename })
}

func testEnvelope(attempts int) envelope.Envelope {
	created := time.Date(2026, 11, 30, 9, 15, 2, 0, time.UTC)
	return envelope.Envelope{
		OperationID: "op-7k2m9q", Status: envelope.StatusUnknown, NextAction: envelope.NextVerify,
		Target: "222", Created: created, Expires: created.Add(time.Hour), Attempts: attempts,
		Response: "timeout after the request was sent", Excerpt: "Hello there",
	}
}

// entries returns the path of every file under dir but the writers' lock file.
func entries(t *testing.T, dir string) []string {
	t.Helper()
	var names []string
	err := filepath.WalkDir(dir, func(path string, d fs.DirEntry, err error) error {
		if err == nil && !d.IsDir() && d.Name() != LockName {
			names = append(names, path)
		}
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
	return names
}

func TestInterruptedWriteKeepsOldNote(t *testing.T) {
	v, err := Open(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	path, err := v.Write(testEnvelope(1))
	if err != nil {
		t.Fatal(err)
	}
	old, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}

	interruptRename(t)
	tests := []struct {
		name  string
		write func() error
	}{
		{"Write", func() error { _, err := v.Write(testEnvelope(2)); return err }},
		{"Resolve", func() error { _, err := v.Resolve("op-7k2m9q", true, "@alice", testEnvelope(1).Created); return err }},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if err := tt.write(); !errors.Is(err, errCrash) {
				t.Errorf("%s: got %v, want %v", tt.name, err, errCrash)
			}
			got, err := os.ReadFile(path)
			if err != nil || !bytes.Equal(got, old) {
				t.Errorf("note after the interrupted %s (%v):\ngot:\n%s\nwant:\n%s", tt.name, err, got, old)
			}
			if names := entries(t, v.Dir()); len(names) != 1 || names[0] != path {
				t.Errorf("files: got %q, want only %s (no temp file)", names, path)
			}
		})
	}
}

func TestInterruptedFirstWriteLeavesNothing(t *testing.T) {
	v, err := Open(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	interruptRename(t)
	if _, err := v.Write(testEnvelope(1)); !errors.Is(err, errCrash) {
		t.Errorf("Write: got %v, want %v", err, errCrash)
	}
	if names := entries(t, v.Dir()); len(names) != 0 {
		t.Errorf("files: got %q, want none", names)
	}
	if _, _, err := v.Get("op-7k2m9q"); !errors.Is(err, ErrNotFound) {
		t.Errorf("Get: got %v, want %v", err, ErrNotFound)
	}
}
