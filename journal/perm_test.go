//go:build unix

package journal_test

import (
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"syscall"
	"testing"
	"time"
)

// setUmask sets the process's umask for the test and restores it after. The umask is
// process-wide: no test in a package that calls this may run in parallel.
func setUmask(t *testing.T, mask int) {
	t.Helper()
	old := syscall.Umask(mask)
	t.Cleanup(func() { syscall.Umask(old) })
}

func modeOf(t *testing.T, path string) fs.FileMode {
	t.Helper()
	fi, err := os.Stat(path)
	if err != nil {
		t.Fatal(err)
	}
	return fi.Mode().Perm()
}

// The journal holds message text: a new journal and its WAL and SHM files are 0600,
// whatever the umask and however open the folder is.
func TestJournalFilesArePrivate(t *testing.T) {
	for _, mask := range []int{0o022, 0o000} {
		t.Run(fmt.Sprintf("umask %04o", mask), func(t *testing.T) {
			setUmask(t, mask)
			dir := t.TempDir()
			if err := os.Chmod(dir, 0o755); err != nil {
				t.Fatal(err)
			}
			file := filepath.Join(dir, "journal.db")
			j := open(t, file, time.Now)
			newOp(t, j) // a write, so that the WAL holds something
			for _, name := range []string{"journal.db", "journal.db-wal", "journal.db-shm"} {
				if got := modeOf(t, filepath.Join(dir, name)); got != 0o600 {
					t.Errorf("%s: mode %04o, want 0600", name, got)
				}
			}
		})
	}
}

// An existing journal keeps the mode someone gave it (the bot warns about a data folder
// open to others instead), and its WAL and SHM files follow it.
func TestJournalKeepsTheModeOfAnExistingFile(t *testing.T) {
	setUmask(t, 0o022)
	dir := t.TempDir()
	file := filepath.Join(dir, "journal.db")
	open(t, file, time.Now).Close()
	if err := os.Chmod(file, 0o640); err != nil {
		t.Fatal(err)
	}
	newOp(t, open(t, file, time.Now))
	for _, name := range []string{"journal.db", "journal.db-wal", "journal.db-shm"} {
		if got := modeOf(t, filepath.Join(dir, name)); got != 0o640 {
			t.Errorf("%s: mode %04o, want the journal's 0640 kept", name, got)
		}
	}
}
