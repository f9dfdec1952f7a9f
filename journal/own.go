package journal

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"time"
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
// releases it too. On PostgreSQL it is a session-level advisory lock held on a
// connection of its own, which the server releases when that connection drops.
func (j *Journal) Own(ctx context.Context, transport string) error {
	if transport == "" || strings.ContainsAny(transport, `/\.`) {
		return fmt.Errorf("journal: own: bad transport name %q", transport)
	}
	if j.pg != nil {
		if err := j.ownPostgres(ctx, transport); err != nil {
			return err
		}
		return j.recoverOwned(ctx, transport)
	}
	path := j.ownerFile(transport)
	f, err := os.OpenFile(path, os.O_RDWR|os.O_CREATE, 0o600)
	if err != nil {
		return fmt.Errorf("journal: own %s: %w", transport, err)
	}
	if err := lockPatiently(f); err != nil {
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
	return j.recoverOwned(ctx, transport)
}

// recoverOwned runs the crash recovery of a transport just owned.
func (j *Journal) recoverOwned(ctx context.Context, transport string) error {
	if err := j.recoverCommitting(ctx, transport); err != nil {
		return fmt.Errorf("journal: own %s: %w", transport, err)
	}
	return nil
}

// ownerFile is the lock file of transport's owner, beside the journal.
func (j *Journal) ownerFile(transport string) string { return OwnerFile(j.file, transport) }

// OwnerFile is the lock file that the owner of transport's sending (Own)
// holds beside the SQLite journal at file: Owner looks at it, and a test can
// hold it as a bot of another process would.
func OwnerFile(file, transport string) string { return file + "." + transport + ".owner" }

// ownedTransports are the transports whose owner's lock file is beside the
// journal: each one's sending is or was owned by some process (Owner says
// whether it still is).
func (j *Journal) ownedTransports() []string {
	dir, base := filepath.Split(j.file)
	if dir == "" {
		dir = "."
	}
	entries, err := os.ReadDir(dir)
	if err != nil {
		return nil // no lock file can be read: none is held that this could see
	}
	var transports []string
	for _, e := range entries {
		rest, beside := strings.CutPrefix(e.Name(), base+".")
		transport, lock := strings.CutSuffix(rest, ".owner")
		if beside && lock && transport != "" && !strings.Contains(transport, ".") {
			transports = append(transports, transport)
		}
	}
	return transports
}

// lockPatiently takes the owner's lock, waiting a moment when it is held: Owner
// holds it for an instant to look, and a look must not turn an owner away.
func lockPatiently(f *os.File) error {
	err := lockFile(f)
	for try := 0; errors.Is(err, errLocked) && try < ownerLookTries; try++ {
		time.Sleep(ownerLookPause)
		err = lockFile(f)
	}
	return err
}

// How long Own waits out a look by Owner: far longer than the look takes.
const (
	ownerLookTries = 5
	ownerLookPause = 10 * time.Millisecond
)

// Owner reports whether a live process owns sending for transport (holds Own's
// lock), and its pid when readable, without taking the lock for good: a stdio
// `countersign mcp` asks it to say that no bot is running instead of leaving a request to
// wait for nobody. It takes a shared lock for an instant, when the lock is free,
// and lets it go (Own waits that instant out). This process's own ownership counts
// as owned. The answer may be out of date the moment it is given; it is for
// telling a person, not for deciding who sends.
func (j *Journal) Owner(transport string) (pid int, owned bool, err error) {
	if transport == "" || strings.ContainsAny(transport, `/\.`) {
		return 0, false, fmt.Errorf("journal: owner: bad transport name %q", transport)
	}
	if j.pg != nil {
		return j.ownerPostgres(context.Background(), transport)
	}
	f, err := os.Open(j.ownerFile(transport))
	if errors.Is(err, os.ErrNotExist) {
		return 0, false, nil // nobody ever owned it
	}
	if err != nil {
		return 0, false, fmt.Errorf("journal: owner of %s: %w", transport, err)
	}
	defer f.Close() // closing the file lets the look's lock go
	err = lookLock(f)
	switch {
	case errors.Is(err, errLocked):
		pid, _ := readPID(f)
		return pid, true, nil
	case err != nil:
		return 0, false, fmt.Errorf("journal: owner of %s: %w", transport, err)
	}
	return 0, false, nil
}

func readPID(f *os.File) (int, error) {
	b := make([]byte, 32)
	n, _ := f.ReadAt(b, 0)
	return strconv.Atoi(strings.TrimSpace(string(b[:n])))
}

// errLocked is lockFile's answer when another open file holds the lock.
var errLocked = errors.New("locked")
