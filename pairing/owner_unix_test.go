//go:build unix

package pairing_test

import (
	"os"
	"path/filepath"
	"syscall"
	"testing"

	"github.com/countersign/countersign/pairing"
)

// serviceUID is the user a systemd unit's data folder belongs to in these
// tests: nobody, on most systems.
const serviceUID = 65534

// Under the shipped systemd unit the data folder is the service user's, 0700,
// and the owner confirms with sudo: paired.json is written as the folder's
// owner, so that the bot, running as that user, can read it.
func TestConfirmAsRootWritesAsTheFoldersOwner(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Skip("needs root, to confirm on a folder of another user's (CI runs as root)")
	}
	dir := filepath.Join(t.TempDir(), "data")
	if err := os.Mkdir(dir, 0o700); err != nil {
		t.Fatal(err)
	}
	c := newClock()
	o := offer(t, open(t, dir, c), 111)
	if err := os.Chown(dir, serviceUID, serviceUID); err != nil {
		t.Fatal(err)
	}
	if _, err := pairing.Confirm(dir, o.Code, c.now()); err != nil {
		t.Fatal(err)
	}
	fi, err := os.Stat(filepath.Join(dir, pairing.PairedFile))
	if err != nil {
		t.Fatal(err)
	}
	st := fi.Sys().(*syscall.Stat_t)
	if st.Uid != serviceUID || st.Gid != serviceUID || fi.Mode().Perm() != 0o600 {
		t.Errorf("%s is %d:%d %v, want the folder owner's %d:%d, 0600", pairing.PairedFile, st.Uid, st.Gid, fi.Mode().Perm(), serviceUID, serviceUID)
	}
	if uid, ok := pairing.FolderOwner(dir); !ok || uid != serviceUID {
		t.Errorf("FolderOwner = %d, %v; want %d", uid, ok, serviceUID)
	}
}
