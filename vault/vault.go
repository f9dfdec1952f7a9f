// Package vault keeps the envelopes of operations whose outcome is unknown, one
// Markdown note each, in a folder usable as an Obsidian vault:
//
//	<dir>/envelopes/2026/11/op-7k2m9q.md
//
// The year and month come from the envelope's creation time (UTC), so a note is found
// by operation id with a glob over the month folders, never a scan of every note.
//
// Every write is atomic (temp file in the same folder, fsync, rename, fsync of the
// folder), so a crash leaves either the old note or the new one, never half of one.
// Before anything reaches disk, Write applies hygiene: secrets are withheld, personal
// data in free text is masked, and message text is cut to a short excerpt (see Mask and
// Excerpt).
//
// A note a person has broken by hand is reported with its path (BrokenError) and left
// alone: reading never modifies a note, and Write, Create, Resolve and GC never
// overwrite or remove a broken one. So is anything but a regular file where a note
// should be (a symbolic link, a FIFO, a socket, a device: ErrNotRegular), which is
// never opened, and a year or month folder that is a symbolic link, which is never
// followed: the package reads and writes only inside the vault's own folders, and
// never waits on a file that is not one.
//
// A Vault serialises its own writers, and holds the folder's lock file while it writes,
// so that writers in other processes (the bot and `countersign vault resolve`) take turns.
// List and GC keep a listing index beside the notes (see indexName), a cache keyed by
// each note's file stamp that spares reading the notes that have not changed. Path
// gives a note's place relative to the vault's folder; every other path the package
// returns is absolute.
package vault

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"sync"
	"time"

	"github.com/countersign/countersign/envelope"
)

// Sentinel errors, returned wrapped; check them with errors.Is.
var (
	// ErrNotFound: no note holds the operation id.
	ErrNotFound = errors.New("vault: envelope not found")
	// ErrAlreadyResolved: the note was resolved with the opposite answer.
	ErrAlreadyResolved = errors.New("vault: envelope already resolved")
	// ErrDuplicate: more than one note holds the operation id.
	ErrDuplicate = errors.New("vault: envelope in more than one note")
	// ErrNameMismatch: a note's operation_id differs from its file name.
	ErrNameMismatch = errors.New("vault: operation_id does not match the file name")
	// ErrSecretID: the operation id looks like a secret, so it cannot name a file.
	ErrSecretID = errors.New("vault: operation id looks like a secret")
	// ErrNotRegular: a note's name, or a folder's, holds something other than a regular
	// file or folder: a symbolic link (never followed), a FIFO, a socket or a device.
	ErrNotRegular = errors.New("vault: not a regular file or folder")
	// ErrExists: Create found a note of the operation's attempt, or of a later one,
	// already written.
	ErrExists = errors.New("vault: envelope already written")
)

// BrokenError reports a note that cannot be read as an envelope: bad YAML, a missing
// operation_id, an unterminated front matter, an unreadable file, a symbolic link or
// special file where a note or folder should be (ErrNotRegular). Path is absolute. Get
// returns it as a *BrokenError; List returns it by value.
type BrokenError struct {
	Path string
	Err  error
}

// Error names the note's path and the cause.
func (e BrokenError) Error() string { return "vault: broken note " + e.Path + ": " + e.Err.Error() }

// Unwrap returns the cause, e.g. an error wrapping envelope.ErrYAML.
func (e BrokenError) Unwrap() error { return e.Err }

// Vault is a folder of envelope notes. Its methods are safe for concurrent use.
type Vault struct {
	dir string
	mu  sync.Mutex // with the folder's lock file (see lock), serialises Write, Create, Resolve and GC
}

// LockName is the file whose lock serialises writers across processes (the running
// bot and `countersign vault resolve`); the leading dot keeps it out of Obsidian's view.
// LockName is the file in the vault folder its writers lock; a backup leaves
// it out.
const LockName = ".countersign.lock"

// envelopesDir is the folder, under the vault's, that holds the notes.
const envelopesDir = "envelopes"

// Open returns the vault in dir, creating dir (mode 0700) if it is missing. It returns
// an error when dir cannot be created or is not a directory.
func Open(dir string) (*Vault, error) {
	abs, err := filepath.Abs(dir)
	if err != nil {
		return nil, fmt.Errorf("vault: open %s: %w", dir, err)
	}
	if err := os.MkdirAll(abs, 0o700); err != nil {
		return nil, fmt.Errorf("vault: open %s: %w", dir, err)
	}
	return &Vault{dir: abs}, nil
}

// Dir returns the vault's absolute folder.
func (v *Vault) Dir() string { return v.dir }

// Path returns where a new note for the operation goes, relative to Dir:
// envelopes/YYYY/MM/<opID>.md, with year and month of created in UTC. It does not
// check opID; Write does.
func (v *Vault) Path(opID string, created time.Time) string {
	created = created.UTC()
	return filepath.Join(envelopesDir, fmt.Sprintf("%04d", created.Year()),
		fmt.Sprintf("%02d", int(created.Month())), opID+".md")
}

// AbsPath is Path joined to Dir.
func (v *Vault) AbsPath(opID string, created time.Time) string {
	return filepath.Join(v.dir, v.Path(opID, created))
}

// Get returns the envelope of the operation and its note's path. It returns an error
// wrapping ErrNotFound when no note holds the id (also when the id is malformed or
// looks like a secret, and then wraps envelope.ErrInvalid or ErrSecretID too),
// ErrDuplicate when several notes do, and a *BrokenError (with the path) when the note
// cannot be read as an envelope, or is not a regular file (then it wraps ErrNotRegular
// and was not opened). Get never modifies the note.
func (v *Vault) Get(opID string) (envelope.Envelope, string, error) {
	e, path, _, err := v.get(opID)
	if err != nil {
		return envelope.Envelope{}, path, fmt.Errorf("vault: get: %w", err)
	}
	return e, path, nil
}

// GetText is Get that also returns the note's bytes as they were read, to show the
// note as it is.
func (v *Vault) GetText(opID string) (envelope.Envelope, string, []byte, error) {
	e, path, data, err := v.get(opID)
	if err != nil {
		return envelope.Envelope{}, path, nil, fmt.Errorf("vault: get: %w", err)
	}
	return e, path, data, nil
}

func (v *Vault) get(opID string) (envelope.Envelope, string, []byte, error) {
	path, typ, err := v.locate(opID)
	if err != nil {
		return envelope.Envelope{}, "", nil, err
	}
	e, data, err := readNote(path, typ)
	if err != nil {
		return envelope.Envelope{}, path, nil, err
	}
	return e, path, data, nil
}

// locate finds the note named after opID in any month folder, and returns its path
// and its type as os.Lstat gives it. A folder that is a symbolic link is not searched.
func (v *Vault) locate(opID string) (string, fs.FileMode, error) {
	if err := checkID(opID); err != nil {
		return "", 0, fmt.Errorf("%w: %w", ErrNotFound, err)
	}
	years, _, err := v.years()
	if err != nil {
		return "", 0, err
	}
	var found []string
	var typ fs.FileMode
	for _, year := range years {
		months, _, err := subdirs(year)
		if err != nil {
			return "", 0, err
		}
		for _, month := range months {
			path := filepath.Join(month, opID+".md")
			fi, err := os.Lstat(path)
			if errors.Is(err, fs.ErrNotExist) {
				continue
			}
			if err != nil {
				return "", 0, err
			}
			found, typ = append(found, path), fi.Mode().Type()
		}
	}
	switch {
	case len(found) == 0:
		return "", 0, fmt.Errorf("%w: %s", ErrNotFound, opID)
	case len(found) > 1:
		slices.Sort(found)
		return "", 0, fmt.Errorf("%w: %s: %v", ErrDuplicate, opID, found)
	}
	return found[0], typ, nil
}

// Write stores the envelope after hygiene (see Mask and Excerpt) and returns the
// note's path. A note that already holds the operation id is replaced where it is;
// otherwise the note goes to AbsPath(e.OperationID, e.Created). The replacement is
// atomic.
//
// Write returns an error wrapping envelope.ErrInvalid for an envelope Render refuses,
// ErrSecretID when the operation id looks like a secret, ErrDuplicate, and the
// *BrokenError of an existing note it cannot read (which it leaves untouched).
func (v *Vault) Write(e envelope.Envelope) (string, error) {
	return v.put("write", e, func(envelope.Envelope) bool { return true })
}

// Create is Write for the first note of an attempt: it writes e unless a note of
// e's operation for the same attempt or a later one (Attempts no fewer than e's)
// is there already, which it leaves as it is and whose path it returns with an
// error wrapping ErrExists. A note of an earlier attempt is replaced where it is.
//
// The look and the write are one step under the writers' lock, which the other
// processes on the folder take too: of two writers that both found the note
// missing (the leader's reconcile, and another replica or a `countersign vault
// resolve` replacing an earlier attempt's note), one writes it and the other is
// told, and a note that an agent may have read, or a person resolved, since it
// was written is never written over. It returns the errors of Write besides.
func (v *Vault) Create(e envelope.Envelope) (string, error) {
	return v.put("create", e, func(old envelope.Envelope) bool { return old.Attempts < e.Attempts })
}

// put writes e's note under the writers' lock: a new note at AbsPath, or over the
// note there when replace says so of its envelope (ErrExists when not).
func (v *Vault) put(what string, e envelope.Envelope, replace func(old envelope.Envelope) bool) (string, error) {
	unlock, err := v.lock()
	if err != nil {
		return "", err
	}
	defer unlock()
	if err := checkID(e.OperationID); err != nil {
		return "", fmt.Errorf("vault: %s: %w", what, err)
	}
	path, typ, err := v.locate(e.OperationID)
	switch {
	case errors.Is(err, ErrNotFound):
		path = v.AbsPath(e.OperationID, e.Created)
	case err != nil:
		return "", fmt.Errorf("vault: %s %s: %w", what, e.OperationID, err)
	default:
		old, _, err := readNote(path, typ)
		if err != nil {
			return "", fmt.Errorf("vault: %s %s: %w", what, e.OperationID, err)
		}
		if !replace(old) {
			return path, fmt.Errorf("vault: %s %s: %w: attempt %d at %s", what, e.OperationID, ErrExists, old.Attempts, path)
		}
	}
	if _, err := v.writeNote(path, e); err != nil {
		return "", fmt.Errorf("vault: %s %s: %w", what, e.OperationID, err)
	}
	return path, nil
}

// Resolve records the verified outcome in the operation's note, rewriting it
// atomically where it is, and returns the envelope as written. Resolving a resolved
// note again with the same answer is a no-op that returns the note's envelope. With
// the opposite answer it returns the note's envelope and an error wrapping
// ErrAlreadyResolved, and leaves the note alone. It also returns the errors of Get.
func (v *Vault) Resolve(opID string, delivered bool, by string, at time.Time) (envelope.Envelope, error) {
	return v.rewrite("resolve", opID, func(e *envelope.Envelope) (bool, error) {
		if !e.Unresolved() {
			if (e.Status == envelope.StatusCommitted) == delivered {
				return false, nil
			}
			return false, fmt.Errorf("%w as %s", ErrAlreadyResolved, e.Status)
		}
		e.Resolve(delivered, by, at)
		return true, nil
	})
}

// Delivered records in an operation's note that a later attempt delivered it (a
// retry after a person verified the first one did not arrive): the note says
// committed, so that nobody reading the vault sends it again. A note already
// committed is left as it is; a missing note returns ErrNotFound.
func (v *Vault) Delivered(opID, by string, at time.Time) (envelope.Envelope, error) {
	return v.rewrite("delivered", opID, func(e *envelope.Envelope) (bool, error) {
		if e.Status == envelope.StatusCommitted {
			return false, nil
		}
		e.Resolve(true, by, at)
		return true, nil
	})
}

// rewrite reads an operation's note under the writers' lock, lets change edit it,
// and writes it back when change says so. It returns the note as it stands.
func (v *Vault) rewrite(what, opID string, change func(*envelope.Envelope) (bool, error)) (envelope.Envelope, error) {
	unlock, err := v.lock()
	if err != nil {
		return envelope.Envelope{}, err
	}
	defer unlock()
	e, path, _, err := v.get(opID)
	if err != nil {
		return envelope.Envelope{}, fmt.Errorf("vault: %s: %w", what, err)
	}
	write, err := change(&e)
	if err != nil || !write {
		if err != nil {
			err = fmt.Errorf("vault: %s %s: %w", what, opID, err)
		}
		return e, err
	}
	written, err := v.writeNote(path, e)
	if err != nil {
		return envelope.Envelope{}, fmt.Errorf("vault: %s %s: %w", what, opID, err)
	}
	return written, nil
}

// writeNote applies hygiene, renders and replaces the note at path atomically. It
// returns the envelope as written.
func (v *Vault) writeNote(path string, e envelope.Envelope) (envelope.Envelope, error) {
	e, err := clean(e)
	if err != nil {
		return envelope.Envelope{}, err
	}
	data, err := e.Render()
	if err != nil {
		return envelope.Envelope{}, err
	}
	if err := mkdirAllSynced(v.dir, filepath.Dir(path)); err != nil {
		return envelope.Envelope{}, err
	}
	if err := writeAtomic(path, data); err != nil {
		return envelope.Envelope{}, err
	}
	return e, nil
}
