package operator_test

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"

	"github.com/countersign/countersign/journal"
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

// The disk fills while Telegram accepts a message: the outcome, known only to
// the process, is written again once there is room, and the operation ends
// committed without a restart, instead of staying committing, unseen by /pending,
// until the next start makes it unknown.
func TestAnOutcomeAFullDiskRefusedIsJournaledWhenSpaceReturns(t *testing.T) {
	h := newHarness(t)
	dir := smallDisk(t)
	h.file = filepath.Join(dir, "journal.db")
	h.open()
	filler := filepath.Join(dir, "filler")
	h.sender.delivered = func() { fill(t, filler) }
	h.clock.onSleep = func() { os.Remove(filler) } // the wait before writing it again
	_, opID := h.send("222", "the disk fills as this leaves")

	r, err := h.op.Decide(context.Background(), h.approval(opID), approverID, true)
	if err != nil {
		t.Fatalf("Decide: %v\n%s", err, h.logs.String())
	}
	if got := h.state(opID); got != journal.Committed || r.OperationID != opID {
		t.Fatalf("state = %s (result %+v), want committed", got, r)
	}
	if got := fmtStates(h.states(opID)); !strings.HasSuffix(got, "committing committed]") {
		t.Errorf("path = %s, want committing then committed", got)
	}
	if logs := h.logs.String(); !strings.Contains(logs, "outcome not journaled: the disk is full") {
		t.Errorf("the disk never refused the outcome, so this tests nothing:\n%s", logs)
	}
	if n := len(h.sender.Sent()); n != 1 {
		t.Errorf("sent %d times, want once", n)
	}
}
