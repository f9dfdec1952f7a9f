//go:build unix

package vault_test

import (
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"syscall"
	"testing"
	"time"

	"github.com/countersign/countersign/vault"
)

// deadline bounds each call that must not block on a FIFO.
const deadline = 10 * time.Second

// within runs fn and fails the test if it has not returned by the deadline.
func within(t *testing.T, what string, fn func()) {
	t.Helper()
	done := make(chan struct{})
	go func() {
		defer close(done)
		fn()
	}()
	select {
	case <-done:
	case <-time.After(deadline):
		t.Fatalf("%s still blocked after %s", what, deadline)
	}
}

// mkfifo makes a FIFO at path, and when the test ends opens it for writing so that a
// reader stuck on it (the defect this guards against) is let go.
func mkfifo(t *testing.T, path string) {
	t.Helper()
	if err := os.MkdirAll(filepath.Dir(path), 0o700); err != nil {
		t.Fatal(err)
	}
	if err := syscall.Mkfifo(path, 0o600); err != nil {
		t.Skipf("mkfifo: %v", err)
	}
	t.Cleanup(func() {
		if f, err := os.OpenFile(path, os.O_WRONLY|syscall.O_NONBLOCK, 0); err == nil {
			f.Close()
		}
	})
}

// brokenPaths returns the paths List reports broken, each checked to wrap want.
func brokenPaths(t *testing.T, broken []vault.BrokenError, want error) map[string]bool {
	t.Helper()
	paths := map[string]bool{}
	for _, b := range broken {
		paths[b.Path] = true
		if !errors.Is(b, want) {
			t.Errorf("broken %s: %v, want it to wrap %v", b.Path, b.Err, want)
		}
	}
	return paths
}

func sameMode(t *testing.T, path string, want fs.FileMode) {
	t.Helper()
	fi, err := os.Lstat(path)
	if err != nil {
		t.Fatalf("%s is gone: %v", path, err)
	}
	if fi.Mode().Type() != want {
		t.Errorf("%s is now %v, want it left as %v", path, fi.Mode().Type(), want)
	}
}

// A FIFO (or a link to one) named like a note blocks nothing: it is reported as
// broken, with its path, and Get, Write, Resolve and GC leave it alone.
func TestFIFOInVaultDoesNotBlock(t *testing.T) {
	v := open(t)
	good := write(t, v, newEnvelope("op-good", t0))
	month := filepath.Dir(good)
	fifo := filepath.Join(month, "op-fifo.md")
	mkfifo(t, fifo)
	link := filepath.Join(month, "op-link.md")
	if err := os.Symlink("op-fifo.md", link); err != nil {
		t.Fatal(err)
	}

	for _, f := range []vault.Filter{{}, {Unresolved: true}, {Target: "222"}} {
		within(t, "List", func() {
			notes, broken, err := v.List(f)
			if err != nil || len(notes) != 1 || notes[0].Path != good {
				t.Errorf("List(%+v): %d notes (%v), want only %s", f, len(notes), err, good)
			}
			if got := brokenPaths(t, broken, vault.ErrNotRegular); len(got) != 2 || !got[fifo] || !got[link] {
				t.Errorf("List(%+v) broken: %v, want %s and %s", f, got, fifo, link)
			}
		})
	}
	for _, id := range []string{"op-fifo", "op-link"} {
		path := filepath.Join(month, id+".md")
		var be *vault.BrokenError
		within(t, "Get "+id, func() {
			if _, _, err := v.Get(id); !errors.As(err, &be) || be.Path != path || !errors.Is(err, vault.ErrNotRegular) {
				t.Errorf("Get %s: %v, want a *BrokenError for %s wrapping ErrNotRegular", id, err, path)
			}
		})
		within(t, "Write "+id, func() {
			if _, err := v.Write(newEnvelope(id, t0)); !errors.As(err, &be) || be.Path != path {
				t.Errorf("Write %s: %v, want a *BrokenError for %s", id, err, path)
			}
		})
		within(t, "Resolve "+id, func() {
			if _, err := v.Resolve(id, true, "@bob", t0); !errors.As(err, &be) || be.Path != path {
				t.Errorf("Resolve %s: %v, want a *BrokenError for %s", id, err, path)
			}
		})
	}
	within(t, "GC", func() {
		if removed, err := v.GC(t0.AddDate(1, 0, 0)); err != nil || len(removed) != 0 {
			t.Errorf("GC: removed %q (%v), want nothing", removed, err)
		}
	})
	sameMode(t, fifo, fs.ModeNamedPipe)
	sameMode(t, link, fs.ModeSymlink)
}

// A link to a note outside the vault, or a month folder that is a link, is never
// followed: the outside note is not read, listed, resolved or removed, and no note is
// written through the link.
func TestSymlinkOutOfVaultIsNotFollowed(t *testing.T) {
	outside := open(t)
	e := newEnvelope("op-out", t0)
	e.Resolve(true, "@alice", t0)
	outNote := write(t, outside, e) // resolved, and expired by the GC below
	outBytes := readBytes(t, outNote)

	v := open(t)
	month := filepath.Dir(v.AbsPath("op-out", t0))
	if err := os.MkdirAll(month, 0o700); err != nil {
		t.Fatal(err)
	}
	link := filepath.Join(month, "op-out.md")
	if err := os.Symlink(outNote, link); err != nil {
		t.Fatal(err)
	}
	// envelopes/2026/12 is a link to the outside vault's November folder.
	linkedMonth := filepath.Join(filepath.Dir(month), "12")
	if err := os.Symlink(filepath.Dir(outNote), linkedMonth); err != nil {
		t.Fatal(err)
	}
	dec := t0.AddDate(0, 0, 5) // 2026-12-05: its note would go under envelopes/2026/12

	notes, broken, err := v.List(vault.Filter{})
	if err != nil || len(notes) != 0 {
		t.Errorf("List: %d notes (%v), want none: the outside note was read", len(notes), err)
	}
	if got := brokenPaths(t, broken, vault.ErrNotRegular); len(got) != 2 || !got[link] || !got[linkedMonth] {
		t.Errorf("List broken: %v, want %s and %s", got, link, linkedMonth)
	}
	var be *vault.BrokenError
	if _, _, err := v.Get("op-out"); !errors.As(err, &be) || be.Path != link {
		t.Errorf("Get through a link: %v, want a *BrokenError for %s", err, link)
	}
	if _, err := v.Resolve("op-out", false, "@bob", t0); !errors.As(err, &be) || be.Path != link {
		t.Errorf("Resolve through a link: %v, want a *BrokenError for %s", err, link)
	}
	if _, err := v.Write(newEnvelope("op-new", dec)); err == nil {
		t.Errorf("Write into a linked month folder succeeded, want it refused")
	}
	if _, err := os.Lstat(filepath.Join(filepath.Dir(outNote), "op-new.md")); !errors.Is(err, fs.ErrNotExist) {
		t.Errorf("a note was written through the linked folder: %v", err)
	}
	if removed, err := v.GC(t0.AddDate(1, 0, 0)); err != nil || len(removed) != 0 {
		t.Errorf("GC: removed %q (%v), want nothing", removed, err)
	}
	sameMode(t, link, fs.ModeSymlink)
	sameMode(t, linkedMonth, fs.ModeSymlink)
	if got := readBytes(t, outNote); string(got) != string(outBytes) {
		t.Errorf("the outside note changed:\n%s", got)
	}
}
