//go:build unix

package pairing

import (
	"fmt"
	"os"
	"syscall"
)

// ownAsFolder gives f to the owner of dir, the folder it is in, when the
// process runs as root and the folder is someone else's: `sudo countersign
// pair` on a service's data folder writes a file the service can read, not a
// root-owned 0600 one that leaves the bot unable to load its access lists.
func ownAsFolder(f *os.File, dir string) error {
	if os.Geteuid() != 0 {
		return nil // a file of one's own, in a folder one may write
	}
	uid, gid, ok := owner(dir)
	if !ok || uid == 0 {
		return nil
	}
	if err := f.Chown(uid, gid); err != nil {
		return fmt.Errorf("pairing: giving %s to the data folder's owner: %w", f.Name(), err)
	}
	return nil
}

// FolderOwner is the user id that owns dir, and whether one could be read:
// whoever may confirm a code on it without sudo.
func FolderOwner(dir string) (uid int, ok bool) {
	uid, _, ok = owner(dir)
	return uid, ok
}

func owner(dir string) (uid, gid int, ok bool) {
	fi, err := os.Stat(dir)
	if err != nil {
		return 0, 0, false
	}
	st, ok := fi.Sys().(*syscall.Stat_t)
	if !ok {
		return 0, 0, false
	}
	return int(st.Uid), int(st.Gid), true
}
