package operator_test

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/countersign/countersign/action"
	"github.com/countersign/countersign/envelope"
	"github.com/countersign/countersign/journal"
	"github.com/countersign/countersign/operator"
)

// smallDisk mounts a tmpfs of 16 MiB for the test and returns its folder; the
// test is skipped where mounting is not allowed (not root).
func smallDisk(t *testing.T) string {
	t.Helper()
	dir := t.TempDir()
	if err := syscall.Mount("tmpfs", dir, "tmpfs", 0, "size=16m,mode=0700"); err != nil {
		t.Skipf("a full disk needs a filesystem of its own: %v", err)
	}
	t.Cleanup(func() { syscall.Unmount(dir, syscall.MNT_DETACH) })
	return dir
}

// fill writes to file until the filesystem has no byte left.
func fill(t *testing.T, file string) {
	f, err := os.Create(file)
	if err != nil {
		t.Error(err)
		return
	}
	defer f.Close()
	for _, size := range []int{1 << 20, 4096, 1} {
		for {
			if _, err := f.Write(make([]byte, size)); err != nil {
				if !errors.Is(err, syscall.ENOSPC) {
					t.Error(err)
				}
				break
			}
		}
	}
}

// A full disk refuses a move of a commit attempt: the write ahead (the retry after
// a 429, as the journal fills during the wait) or the outcome (the disk fills as
// Telegram accepts). The move is written again once there is room, and the
// operation ends committed without a restart, sent once, instead of staying
// retry_wait or committing, unseen by /pending, until the next start.
func TestAnAttemptAFullDiskRefusedGoesOnWhenSpaceReturns(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name  string
		fills string // "delivered": as Telegram accepts; "wait": during the retry's wait
		path  string
	}{
		{"the outcome", "delivered", "[awaiting_approval approved committing committed]"},
		{"the write ahead", "wait", "[awaiting_approval approved committing retry_wait committing committed]"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var script []error
			if tt.fills == "wait" {
				script = []error{rateLimited(time.Second), nil}
			}
			h := newHarness(t, script...)
			dir := smallDisk(t)
			h.file = filepath.Join(dir, "journal.db")
			h.open()
			filler := filepath.Join(dir, "filler")
			sleeps := 0
			h.clock.onSleep = func() {
				sleeps++
				if tt.fills == "wait" && sleeps == 1 {
					fill(t, filler) // the retry's wait
					return
				}
				os.Remove(filler) // the wait before writing the move again
			}
			if tt.fills == "delivered" {
				h.sender.delivered = func() { fill(t, filler) }
			}
			_, opID := h.send("222", "the disk fills on the way")

			if _, err := h.op.Decide(context.Background(), h.approval(opID), approverID, true); err != nil {
				t.Fatalf("Decide: %v\n%s", err, h.logs.String())
			}
			if got := fmtStates(h.states(opID)); !strings.HasSuffix(got, strings.TrimPrefix(tt.path, "[awaiting_approval ")) {
				t.Errorf("path = %s, want it to end %s", got, tt.path)
			}
			if logs := h.logs.String(); !strings.Contains(logs, "not journaled: the disk is full") {
				t.Errorf("the disk never refused a move, so this tests nothing:\n%s", logs)
			}
			if n, want := len(h.sender.Sent()), len(script); n != max(want, 1) {
				t.Errorf("sent %d times, want %d", n, max(want, 1))
			}
		})
	}
}

// A task whose first call the full disk refused was never stored: Begin returns
// no task id for it, so that a surface keeping the task of a session (an MCP
// session's) does not run its later calls in a task that does not exist, each
// failing "task not found" long after space returned.
func TestABeginAFullDiskRefusedLeavesNoTask(t *testing.T) {
	t.Parallel()
	h := newHarness(t)
	dir := smallDisk(t)
	h.file = filepath.Join(dir, "journal.db")
	h.open()
	filler := filepath.Join(dir, "filler")
	ctx := context.Background()
	fill(t, filler)
	task, _, err := h.op.Begin(ctx, journal.Task{Surface: "mcp", Summary: "a session"}, operator.Call{Tool: "commit_send_message", Args: sendArgs("222", "refused by the full disk")})
	if err == nil {
		t.Fatal("Begin on a full disk succeeded, so this tests nothing")
	}
	if task.ID != "" {
		if _, err := h.j.Task(ctx, task.ID); err != nil {
			t.Errorf("Begin returned task %s, which is not stored (%v): a later call in it fails", task.ID, err)
		}
	}
	os.Remove(filler)
	task, r, err := h.op.Begin(ctx, journal.Task{Surface: "mcp", Summary: "a session"}, operator.Call{Tool: "commit_send_message", Args: sendArgs("222", "asked again with room")})
	if err != nil || r.Status != action.StatusPending || task.ID == "" {
		t.Fatalf("Begin with room = %v, %+v, %v; want a stored task and a pending commit", task, r, err)
	}
	if _, err := h.j.Task(ctx, task.ID); err != nil {
		t.Errorf("task %s: %v", task.ID, err)
	}
}

// Found by the chaos run (seed 11): an operation resolved not delivered, retried
// and delivered while the disk was full kept its note saying not_committed, an
// invitation to send it once more, until a person set it by hand. The note is
// owed: Reconcile writes it once there is room, in the process that could not
// and, after a restart, in the next one.
func TestANoteAFullDiskKeptFromSayingDeliveredIsWrittenWhenSpaceReturns(t *testing.T) {
	t.Parallel()
	for _, restart := range []bool{false, true} {
		t.Run(fmt.Sprint("restart=", restart), func(t *testing.T) {
			h := newHarness(t, unknown, nil)
			dir := smallDisk(t)
			h.vaultDir = filepath.Join(dir, "vault")
			h.open()
			ctx := context.Background()
			opID := unknownOp(t, h, "delivered on a full disk")
			if _, err := h.op.Resolve(ctx, opID, false, "@alice"); err != nil {
				t.Fatal(err)
			}
			if r, err := h.op.Retry(ctx, opID); err != nil || r.Status != "pending" {
				t.Fatalf("Retry = %+v, %v; want pending", r, err)
			}
			if _, err := h.op.Reconcile(ctx); err != nil { // its look at every note done
				t.Fatal(err)
			}
			filler := filepath.Join(dir, "filler")
			h.sender.delivered = func() { fill(t, filler) }
			if r, err := h.op.Decide(ctx, h.approval(opID), approverID, true); err != nil || r.SideEffect != "committed" {
				t.Fatalf("Decide = %+v, %v; want committed", r, err)
			}
			if e, _, err := h.vault.Get(opID); err != nil || e.Status != envelope.StatusNotCommitted {
				t.Fatalf("the note on the full disk: %+v, %v; want it still not_committed, or this tests nothing", e, err)
			}
			os.Remove(filler)
			if restart {
				h.open()
			}
			if _, err := h.op.Reconcile(ctx); err != nil {
				t.Fatal(err)
			}
			if e, _, err := h.vault.Get(opID); err != nil || e.Status != envelope.StatusCommitted || e.NextAction != envelope.NextNone {
				t.Errorf("the note once there is room: %+v, %v; want committed, next action none", e, err)
			}
		})
	}
}
