//go:build unix

package vault

import (
	"os"
	"syscall"
	"testing"
)

// The temp file a note is written to before its rename is 0600 from its creation.
func TestTempNoteIsPrivate(t *testing.T) {
	old := syscall.Umask(0) // process-wide: this package's tests do not run in parallel
	t.Cleanup(func() { syscall.Umask(old) })
	var seen []os.FileMode
	rename = func(from, to string) error {
		if fi, err := os.Stat(from); err == nil {
			seen = append(seen, fi.Mode().Perm())
		}
		return os.Rename(from, to)
	}
	t.Cleanup(func() { rename = os.Rename })
	v, err := Open(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	if _, err := v.Write(testEnvelope(1)); err != nil {
		t.Fatal(err)
	}
	if len(seen) != 1 || seen[0] != 0o600 {
		t.Errorf("temp file modes before rename: %v, want [-rw-------]", seen)
	}
}
