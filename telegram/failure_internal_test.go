package telegram

import (
	"context"
	"errors"
	"path/filepath"
	"strings"
	"testing"

	"github.com/countersign/countersign/journal"
)

// A step the journal refused for want of room (a tap that cannot be recorded, a
// commit whose move cannot be written) is answered with the cause, the bot's full
// disk, and what to do; any other failure is not blamed on the disk. The error is a
// real one, from a journal at its size limit.
func TestAFailureFromAFullDiskSaysSo(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	file := filepath.Join(t.TempDir(), "journal.db")
	j, err := journal.Open(ctx, file) // the schema, with room
	if err != nil {
		t.Fatal(err)
	}
	j.Close()
	j, err = journal.Open(ctx, file, journal.WithSizeLimit(1)) // then frozen at its size
	if err != nil {
		t.Fatal(err)
	}
	defer j.Close()
	var full error
	for i := 0; full == nil && i < 1000; i++ {
		_, full = j.CreateTask(ctx, journal.Task{Requester: 1, Chat: "1", Summary: strings.Repeat("x", 8192)})
	}
	if !journal.IsFull(full) {
		t.Fatalf("the journal at its limit answered %v, not a full disk", full)
	}
	for _, tt := range []struct {
		name string
		err  error
		disk bool
	}{
		{"a full disk", full, true},
		{"a full disk, wrapped", errors.Join(errors.New("operator: record"), full), true},
		{"anything else", errors.New("journal: operation op-1: not found"), false},
	} {
		got := failure(tt.err)
		if strings.Contains(got, "disk is full") != tt.disk {
			t.Errorf("%s: failure = %q; want the disk named: %v", tt.name, got, tt.disk)
		}
		if !strings.Contains(got, "/pending") {
			t.Errorf("%s: failure = %q; want it to send the person to /pending", tt.name, got)
		}
	}
}
