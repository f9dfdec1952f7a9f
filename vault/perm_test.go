//go:build unix

package vault_test

import (
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"syscall"
	"testing"
)

// Notes hold masked excerpts of messages: every note, temp file and the lock file is
// 0600 and every folder the vault makes 0700, whatever the umask.
func TestVaultFilesArePrivate(t *testing.T) {
	for _, mask := range []int{0o022, 0o000} {
		t.Run(fmt.Sprintf("umask %04o", mask), func(t *testing.T) {
			old := syscall.Umask(mask) // process-wide: this package's tests do not run in parallel
			t.Cleanup(func() { syscall.Umask(old) })
			v := open(t)
			write(t, v, newEnvelope("op-1", t0))
			if _, err := v.Resolve("op-1", true, "@alice", t0); err != nil {
				t.Fatal(err)
			}
			err := filepath.WalkDir(v.Dir(), func(path string, d fs.DirEntry, err error) error {
				if err != nil {
					return err
				}
				fi, err := d.Info()
				if err != nil {
					return err
				}
				want := fs.FileMode(0o600)
				if d.IsDir() {
					want = 0o700
				}
				if got := fi.Mode().Perm(); got != want {
					t.Errorf("%s: mode %04o, want %04o", path, got, want)
				}
				return nil
			})
			if err != nil {
				t.Fatal(err)
			}
			if _, err := os.Stat(filepath.Join(v.Dir(), ".countersign.lock")); err != nil {
				t.Errorf("the lock file was not checked: %v", err)
			}
		})
	}
}
