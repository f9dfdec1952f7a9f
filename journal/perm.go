package journal

import (
	"errors"
	"io/fs"
	"os"
)

// createPrivate creates an empty database file with mode 0600, whatever the umask,
// when none exists, before SQLite opens it. SQLite gives the -wal and -shm files it
// creates the database file's permission bits, so they are 0600 too; left to itself
// it creates all three 0644 less the umask, readable by every user of the machine.
//
// An existing file keeps its mode: a wider one may have been chosen on purpose (the
// bot warns at start when the data folder is open to others).
func createPrivate(file string) error {
	if file == "" || file == ":memory:" { // SQLite's temporary and in-memory databases
		return nil
	}
	f, err := os.OpenFile(file, os.O_RDWR|os.O_CREATE|os.O_EXCL, 0o600)
	if errors.Is(err, fs.ErrExist) {
		return nil
	}
	if err != nil {
		return err
	}
	err = f.Chmod(0o600) // the umask may have taken bits the journal needs
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	return err
}
