package journal

import (
	"context"
	"errors"
	"fmt"
	"os"
	"strconv"
	"strings"
)

// ErrOwned means another live process owns sending for a transport on this journal.
var ErrOwned = errors.New("another process owns sending on this journal")

// OwnedError says which transport is owned elsewhere and, when it could be read,
// by which process. It unwraps to ErrOwned.
type OwnedError struct {
	Transport string
	Lock      string // the lock file
	PID       int    // the owner's process id, 0 when unknown
}

func (e *OwnedError) Error() string {
	who := "another process"
	if e.PID > 0 {
		who = "process " + strconv.Itoa(e.PID)
	}
	return fmt.Sprintf("journal: %s already sends %s operations from this journal (lock %s): stop it first, or use another data folder", who, e.Transport, e.Lock)
}

func (e *OwnedError) Unwrap() error { return ErrOwned }

// Own makes this process the one that sends the operations of transport (e.g.
// "telegram", "console") recorded in the journal, and then runs their crash
// recovery: every one of them left in committing moves to unknown with the reason
// crash_recovery, because the process that was sending it died and nobody can know
// whether the request took effect. It returns an *OwnedError when another live
// process owns the transport. Ownership is an advisory lock on a file beside the
// journal, which the kernel releases when its owner dies however it dies; Close
// releases it too.
func (j *Journal) Own(ctx context.Context, transport string) error {
	if transport == "" || strings.ContainsAny(transport, `/\.`) {
		return fmt.Errorf("journal: own: bad transport name %q", transport)
	}
	path := j.file + "." + transport + ".owner"
	f, err := os.OpenFile(path, os.O_RDWR|os.O_CREATE, 0o600)
	if err != nil {
		return fmt.Errorf("journal: own %s: %w", transport, err)
	}
	if err := lockFile(f); err != nil {
		pid, _ := readPID(f)
		f.Close()
		if errors.Is(err, errLocked) {
			return &OwnedError{Transport: transport, Lock: path, PID: pid}
		}
		return fmt.Errorf("journal: own %s: %w", transport, err)
	}
	// The pid is for the message a second process prints; the lock is what counts.
	if err := f.Truncate(0); err == nil {
		f.WriteAt([]byte(strconv.Itoa(os.Getpid())+"\n"), 0)
	}
	j.owned = append(j.owned, f)
	if err := j.recoverCommitting(ctx, transport); err != nil {
		return fmt.Errorf("journal: own %s: %w", transport, err)
	}
	return nil
}

func readPID(f *os.File) (int, error) {
	b := make([]byte, 32)
	n, _ := f.ReadAt(b, 0)
	return strconv.Atoi(strings.TrimSpace(string(b[:n])))
}

// errLocked is lockFile's answer when another open file holds the lock.
var errLocked = errors.New("locked")
