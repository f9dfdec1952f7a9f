//go:build unix

package main

import (
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/countersign/countersign/vault"
)

// "countersign vault list|show|gc" finish with a FIFO where a note should be, report it with
// its path, and leave it; show never prints a file a link points to.
func TestFIFOInVaultDoesNotBlock(t *testing.T) {
	data := t.TempDir()
	id := unknownIn(t, data)
	v, err := vault.Open(filepath.Join(data, "vault"))
	if err != nil {
		t.Fatal(err)
	}
	_, note, text, err := v.GetText(id)
	if err != nil {
		t.Fatal(err)
	}
	month := filepath.Dir(note)
	// The note moves out of the vault and a link to it takes its place; a FIFO stands
	// where another operation's note would be.
	outside := filepath.Join(t.TempDir(), id+".md")
	if err := os.WriteFile(outside, text, 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.Remove(note); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(outside, note); err != nil {
		t.Fatal(err)
	}
	fifo := filepath.Join(month, "op-fifo.md")
	if err := syscall.Mkfifo(fifo, 0o600); err != nil {
		t.Skipf("mkfifo: %v", err)
	}
	t.Cleanup(func() { // let a reader stuck on the FIFO go
		if f, err := os.OpenFile(fifo, os.O_WRONLY|syscall.O_NONBLOCK, 0); err == nil {
			f.Close()
		}
	})
	run := func(args ...string) result {
		t.Helper()
		done := make(chan result, 1)
		go func() { done <- runMain(t, "", nil, append([]string{"vault"}, args...)...) }()
		select {
		case r := <-done:
			return r
		case <-time.After(10 * time.Second):
			t.Fatalf("countersign vault %v still blocked after 10s", args)
			return result{}
		}
	}

	r := run("list", "-data", data)
	if r.code != 0 || r.stdout != "no notes listed: the 2 above could not be read\n" || !strings.Contains(r.stderr, "broken note, skipped: "+fifo) || !strings.Contains(r.stderr, "broken note, skipped: "+note) {
		t.Errorf("vault list: exit %d\nstdout:\n%s\nstderr:\n%s\nwant the FIFO and the link reported, nothing listed", r.code, r.stdout, r.stderr)
	}
	for _, tt := range []struct{ id, path string }{{"op-fifo", fifo}, {id, note}} {
		r = run("show", "-data", data, tt.id)
		if r.code != 1 || r.stdout != "" || !strings.Contains(r.stderr, tt.path) {
			t.Errorf("vault show %s: exit %d\nstdout:\n%s\nstderr:\n%s\nwant exit 1 naming %s", tt.id, r.code, r.stdout, r.stderr, tt.path)
		}
	}
	if r = run("gc", "-data", data); r.code != 0 || r.stdout != "no notes removed: none is resolved and past its time\n" {
		t.Errorf("vault gc: exit %d removed %q, want nothing", r.code, r.stdout)
	}
	if fi, err := os.Lstat(fifo); err != nil || fi.Mode().Type() != os.ModeNamedPipe {
		t.Errorf("the FIFO was not left alone: %v", err)
	}
	if fi, err := os.Lstat(note); err != nil || fi.Mode().Type() != os.ModeSymlink {
		t.Errorf("the link was not left alone: %v", err)
	}
}
