//go:build unix

package journaltest

import (
	"os"
	"strconv"
	"syscall"
	"testing"

	"github.com/countersign/countersign/journal"
)

// HoldOwner holds, until release or the end of the test, the lock that a bot
// of process pid holds while it sends transport's operations from the SQLite
// journal at file (journal.Own): the lock file beside it, locked, with the
// pid written in it.
func HoldOwner(t testing.TB, file, transport string, pid int) (release func()) {
	t.Helper()
	f, err := os.OpenFile(journal.OwnerFile(file, transport), os.O_RDWR|os.O_CREATE, 0o600)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { f.Close() })
	if err := syscall.Flock(int(f.Fd()), syscall.LOCK_EX|syscall.LOCK_NB); err != nil {
		t.Fatalf("lock %s: %v", f.Name(), err)
	}
	if _, err := f.WriteString(strconv.Itoa(pid) + "\n"); err != nil {
		t.Fatal(err)
	}
	return func() { f.Close() }
}
