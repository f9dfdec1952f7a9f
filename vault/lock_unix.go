//go:build unix

package vault

import (
	"fmt"
	"os"
	"path/filepath"
	"syscall"
)

// lock serialises Write, Create, Resolve and GC within the process and across
// processes on the same folder, so that a read-then-write (Resolve, Create) never
// acts on a note another writer is changing. It returns the function that releases the lock.
func (v *Vault) lock() (func(), error) {
	v.mu.Lock()
	// openFlags: a link named like the lock file is refused, not followed out of the vault.
	f, err := os.OpenFile(filepath.Join(v.dir, LockName), os.O_RDWR|os.O_CREATE|openFlags, 0o600)
	if err != nil {
		v.mu.Unlock()
		return nil, fmt.Errorf("vault: lock: %w", err)
	}
	if err := syscall.Flock(int(f.Fd()), syscall.LOCK_EX); err != nil {
		f.Close()
		v.mu.Unlock()
		return nil, fmt.Errorf("vault: lock: %w", err)
	}
	return func() {
		syscall.Flock(int(f.Fd()), syscall.LOCK_UN)
		f.Close()
		v.mu.Unlock()
	}, nil
}

// tryLock is lock without waiting: ok is false when another writer, in this process or
// another, holds the lock. List uses it to save the index, which can always wait for
// the next List.
func (v *Vault) tryLock() (unlock func(), ok bool) {
	if !v.mu.TryLock() {
		return nil, false
	}
	f, err := os.OpenFile(filepath.Join(v.dir, LockName), os.O_RDWR|os.O_CREATE|openFlags, 0o600)
	if err != nil {
		v.mu.Unlock()
		return nil, false
	}
	if err := syscall.Flock(int(f.Fd()), syscall.LOCK_EX|syscall.LOCK_NB); err != nil {
		f.Close()
		v.mu.Unlock()
		return nil, false
	}
	return func() {
		syscall.Flock(int(f.Fd()), syscall.LOCK_UN)
		f.Close()
		v.mu.Unlock()
	}, true
}
