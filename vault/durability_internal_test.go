//go:build unix

package vault

import (
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"syscall"
	"testing"
	"time"
)

// recordWrites replaces rename and syncFile with versions that log each call, in
// order, and restores them when the test ends.
func recordWrites(t *testing.T) *[]string {
	t.Helper()
	var log []string
	rename = func(from, to string) error {
		log = append(log, "rename "+filepath.Base(from)+" -> "+filepath.Base(to))
		return os.Rename(from, to)
	}
	syncFile = func(f *os.File) error {
		log = append(log, "fsync "+filepath.Base(f.Name()))
		return f.Sync()
	}
	t.Cleanup(func() { rename, syncFile = os.Rename, (*os.File).Sync })
	return &log
}

// A note is replaced durably: its temp file is fsynced before the rename, and the
// folder after it, so that a crash at any point leaves the old note or the new one.
func TestWriteSyncsTheNoteThenRenamesThenSyncsTheFolder(t *testing.T) {
	v, err := Open(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	path, err := v.Write(testEnvelope(1))
	if err != nil {
		t.Fatal(err)
	}
	log := recordWrites(t)
	if _, err := v.Write(testEnvelope(2)); err != nil { // the folders exist: only the note's own steps
		t.Fatal(err)
	}
	if len(*log) != 3 {
		t.Fatalf("steps of a write: %q, want fsync of the temp file, rename, fsync of the folder", *log)
	}
	tmp := (*log)[0][len("fsync "):]
	want := []string{"fsync " + tmp, "rename " + tmp + " -> " + filepath.Base(path), "fsync " + filepath.Base(filepath.Dir(path))}
	if !slices.Equal(*log, want) || tmp == filepath.Base(path) {
		t.Errorf("steps of a write:\n got %q\nwant %q", *log, want)
	}
}

// readFile refuses what is not a regular file even when the listing said it was
// one: the entry may be swapped for a link or a FIFO between the listing and the
// open, and the open itself must neither follow the link nor wait on the FIFO.
func TestReadFileRefusesAnEntrySwappedAfterTheListing(t *testing.T) {
	outside := filepath.Join(t.TempDir(), "op-out.md")
	if err := os.WriteFile(outside, []byte("outside the vault"), 0o600); err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	for _, tt := range []struct {
		name string
		make func(path string) error
	}{
		{"a link to a file outside", func(path string) error { return os.Symlink(outside, path) }},
		{"a FIFO", func(path string) error { return syscall.Mkfifo(path, 0o600) }},
		{"a folder", func(path string) error { return os.Mkdir(path, 0o700) }},
	} {
		t.Run(tt.name, func(t *testing.T) {
			path := filepath.Join(dir, tt.name+".md")
			if err := tt.make(path); err != nil {
				t.Skipf("cannot make %s: %v", tt.name, err)
			}
			t.Cleanup(func() { // let go of a reader stuck on the FIFO, the defect this guards against
				if f, err := os.OpenFile(path, os.O_WRONLY|syscall.O_NONBLOCK, 0); err == nil {
					f.Close()
				}
			})
			type read struct {
				data []byte
				err  error
			}
			done := make(chan read, 1)
			go func() {
				data, _, err := readFile(path, 0, nil) // 0: listed as a regular file
				done <- read{data, err}
			}()
			select {
			case got := <-done:
				if !errors.Is(got.err, ErrNotRegular) {
					t.Errorf("readFile = %q, %v; want an error wrapping ErrNotRegular", got.data, got.err)
				}
			case <-time.After(10 * time.Second):
				t.Fatal("readFile still blocked after 10s")
			}
		})
	}
}

// A link where the writers' lock file should be is refused: the lock is never taken
// on, or created at, a file outside the vault.
func TestALinkNamedLikeTheLockFileIsRefused(t *testing.T) {
	v, err := Open(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	elsewhere := filepath.Join(t.TempDir(), "not-the-vaults")
	if err := os.Symlink(elsewhere, filepath.Join(v.Dir(), LockName)); err != nil {
		t.Fatal(err)
	}
	if _, err := v.Write(testEnvelope(1)); err == nil {
		t.Error("Write took its lock through a link")
	}
	if _, err := os.Lstat(elsewhere); !errors.Is(err, fs.ErrNotExist) {
		t.Errorf("the link's target was created: %v", err)
	}
}

// While a writer replaces a note it holds the folder's lock exclusively: another
// process (here another open file of the lock) can take it neither shared nor
// exclusive, so the running bot and `countersign vault resolve` never both write.
func TestAWriterHoldsTheFolderLockExclusively(t *testing.T) {
	v, err := Open(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	var probed []error
	rename = func(from, to string) error {
		f, err := os.OpenFile(filepath.Join(v.Dir(), LockName), os.O_RDWR, 0)
		if err != nil {
			probed = append(probed, err)
		} else {
			err = syscall.Flock(int(f.Fd()), syscall.LOCK_SH|syscall.LOCK_NB)
			probed = append(probed, err)
			f.Close() // closing drops a lock the probe may have taken
		}
		return os.Rename(from, to)
	}
	t.Cleanup(func() { rename = os.Rename })
	if _, err := v.Write(testEnvelope(1)); err != nil {
		t.Fatal(err)
	}
	if _, err := v.Resolve("op-7k2m9q", true, "@alice", time.Now()); err != nil {
		t.Fatal(err)
	}
	if len(probed) != 2 {
		t.Fatalf("probed %d times, want once per write", len(probed))
	}
	for i, err := range probed {
		if !errors.Is(err, syscall.EWOULDBLOCK) {
			t.Errorf("write %d: another taker of the lock got %v, want EWOULDBLOCK", i+1, err)
		}
	}
}
