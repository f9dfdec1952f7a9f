//go:build unix

package operator_test

import (
	"context"
	"errors"
	"io/fs"
	"os"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/countersign/countersign/journal"
	"github.com/countersign/countersign/vault"
)

// A FIFO where an operation's envelope should be does not hang the sweep's reconcile
// (which holds the resolving lock) or a resolution: it is reported with its path and
// left alone, and the operation is resolved in the journal.
func TestFIFOInVaultDoesNotBlockReconcile(t *testing.T) {
	t.Parallel()
	h := newHarness(t, unknown)
	opID := unknownOp(t, h, "the note became a FIFO")
	_, path, _ := h.vault.Get(opID)
	if err := os.Remove(path); err != nil {
		t.Fatal(err)
	}
	if err := syscall.Mkfifo(path, 0o600); err != nil {
		t.Skipf("mkfifo: %v", err)
	}
	t.Cleanup(func() { // let a reader stuck on the FIFO go
		if f, err := os.OpenFile(path, os.O_WRONLY|syscall.O_NONBLOCK, 0); err == nil {
			f.Close()
		}
	})
	within := func(what string, fn func()) {
		t.Helper()
		done := make(chan struct{})
		go func() {
			defer close(done)
			fn()
		}()
		select {
		case <-done:
		case <-time.After(10 * time.Second):
			t.Fatalf("%s still blocked after 10s", what)
		}
	}

	within("Reconcile", func() {
		if resolved, err := h.op.Reconcile(context.Background()); err != nil || len(resolved) != 0 {
			t.Errorf("Reconcile = %v, %v; want nothing resolved", resolved, err)
		}
	})
	if logs := h.logs.String(); !strings.Contains(logs, path) || !strings.Contains(logs, "FIFO") {
		t.Errorf("the log does not name the FIFO:\n%s", logs)
	}
	if h.state(opID) != journal.Unknown {
		t.Errorf("state = %s, want still unknown", h.state(opID))
	}
	within("Resolve", func() {
		if _, err := h.op.Resolve(context.Background(), opID, false, "@alice"); err != nil {
			t.Errorf("Resolve: %v, want the journal resolved and the FIFO left alone", err)
		}
	})
	if h.state(opID) != journal.NotDelivered {
		t.Errorf("state = %s, want not_delivered", h.state(opID))
	}
	if fi, err := os.Lstat(path); err != nil || fi.Mode().Type() != fs.ModeNamedPipe {
		t.Errorf("the FIFO was not left alone: %v %v", fi, err)
	}
	if _, _, err := h.vault.Get(opID); !errors.Is(err, vault.ErrNotRegular) {
		t.Errorf("Get = %v, want ErrNotRegular", err)
	}
}
