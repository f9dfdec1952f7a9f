package vault

import (
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"sync/atomic"

	"github.com/countersign/countersign/envelope"
)

// rename is os.Rename, and syncFile (*os.File).Sync; tests replace them to interrupt
// a write just before the rename, and to see that every fsync a write needs is made,
// in its order.
var (
	rename   = os.Rename
	syncFile = (*os.File).Sync
)

// writeAtomic replaces path with data: a temp file in the same folder (hidden, and not
// named *.md, so neither Obsidian nor List sees it), write, fsync, rename over path,
// fsync the folder so the rename itself survives a crash. On failure before the
// rename the temp file is removed and path is untouched.
func writeAtomic(path string, data []byte) error {
	dir := filepath.Dir(path)
	f, err := os.CreateTemp(dir, "."+filepath.Base(path)+".*.tmp")
	if err != nil {
		return err
	}
	tmp := f.Name()
	if err := writeSync(f, data); err != nil {
		os.Remove(tmp)
		return err
	}
	if err := rename(tmp, path); err != nil {
		os.Remove(tmp)
		return err
	}
	return syncDir(dir)
}

func writeSync(f *os.File, data []byte) error {
	_, err := f.Write(data)
	if err == nil {
		err = syncFile(f)
	}
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	return err
}

func syncDir(dir string) error {
	d, err := os.Open(dir)
	if err != nil {
		return err
	}
	err = syncFile(d)
	if cerr := d.Close(); err == nil {
		err = cerr
	}
	return err
}

// mkdirAllSynced creates dir and its missing parents (mode 0700), fsyncing the parent
// of each folder it creates so that a note's folder survives a crash with the note.
// Below top (the vault's folder) a symbolic link is not followed: a link where a
// folder should be is an error wrapping ErrNotRegular, so no note is written through
// it. top itself, and what is above it, may be links (the vault may live anywhere).
func mkdirAllSynced(top, dir string) error {
	stat := os.Lstat
	if !strings.HasPrefix(dir, top+string(filepath.Separator)) {
		stat = os.Stat
	}
	if fi, err := stat(dir); err == nil {
		if !fi.IsDir() {
			return fmt.Errorf("%s: %w", dir, notRegular(fi.Mode().Type()))
		}
		return nil
	}
	parent := filepath.Dir(dir)
	if parent != dir {
		if err := mkdirAllSynced(top, parent); err != nil {
			return err
		}
	}
	if err := os.Mkdir(dir, 0o700); err != nil && !errors.Is(err, fs.ErrExist) {
		return err
	}
	return syncDir(parent)
}

// maxNoteSize bounds what is read of a note; a larger file is reported as broken.
const maxNoteSize = 1 << 20

var errTooLarge = fmt.Errorf("larger than %d bytes", maxNoteSize)

// readNote reads and parses the note at path, whose type (as os.Lstat or a folder
// listing gives it) is typ, and returns its envelope and bytes. It returns an error wrapping ErrNotFound when the file is
// gone, and a *BrokenError for anything else that keeps it from being an envelope
// named by its file. The file is only read.
func readNote(path string, typ fs.FileMode) (envelope.Envelope, []byte, error) {
	data, _, err := readFile(path, typ, make([]byte, 0, 4096))
	if errors.Is(err, fs.ErrNotExist) {
		return envelope.Envelope{}, nil, fmt.Errorf("%w: %w", ErrNotFound, err)
	}
	if err != nil {
		return envelope.Envelope{}, nil, &BrokenError{Path: path, Err: err}
	}
	e, err := parseNote(path, data)
	if err != nil {
		return envelope.Envelope{}, nil, &BrokenError{Path: path, Err: err}
	}
	return e, data, nil
}

// parseNote parses a note and checks that its operation id names its file.
func parseNote(path string, data []byte) (envelope.Envelope, error) {
	e, err := envelope.Parse(data)
	if err != nil {
		return envelope.Envelope{}, err
	}
	if name := strings.TrimSuffix(filepath.Base(path), ".md"); e.OperationID != name {
		return envelope.Envelope{}, ErrNameMismatch
	}
	return e, nil
}

// readFile appends the bytes of the note at path to buf, up to maxNoteSize, and returns
// them with the opened file's stat, taken before the read (so that the stamp of a file
// changed during the read no longer matches it). It is the one way the package reads a
// note, and it reads only a regular file in its place:
//
//   - typ is the entry's type as listed (a DirEntry's Type, or os.Lstat's): a
//     symbolic link, FIFO, socket, device or folder is refused without being opened;
//   - the open does not follow a link and does not wait on a FIFO (openFlags), and
//     the opened file is checked again, so an entry swapped for one of those between
//     the listing and the open is refused too.
//
// A refusal wraps ErrNotRegular. A link is refused even when it points to a note in
// the vault: a note with two names would be answered under one and still read as
// unresolved under the other, and gc would remove the link, not the note.
func readFile(path string, typ fs.FileMode, buf []byte) ([]byte, fs.FileInfo, error) {
	if !typ.IsRegular() {
		return nil, nil, notRegular(typ)
	}
	f, err := os.OpenFile(path, os.O_RDONLY|openFlags, 0)
	if isLinkError(err) {
		return nil, nil, notRegular(fs.ModeSymlink)
	}
	if err != nil {
		return nil, nil, err
	}
	defer f.Close()
	fi, err := f.Stat()
	if err != nil {
		return nil, nil, err
	}
	if !fi.Mode().IsRegular() {
		return nil, nil, notRegular(fi.Mode().Type())
	}
	noteReads.Add(1)
	for {
		if len(buf) == cap(buf) {
			if len(buf) > maxNoteSize {
				return nil, nil, errTooLarge
			}
			buf = append(buf, 0)[:len(buf)]
		}
		n, err := f.Read(buf[len(buf):cap(buf)])
		buf = buf[:len(buf)+n]
		if errors.Is(err, io.EOF) {
			return buf, fi, nil
		}
		if err != nil {
			return nil, nil, err
		}
	}
}

// noteReads counts the notes readFile has read, so that tests can tell a note the
// index answered for from one read again.
var noteReads atomic.Int64

// notRegular is the ErrNotRegular of an entry of type typ, saying what it is.
func notRegular(typ fs.FileMode) error {
	what := "a special file"
	switch {
	case typ&fs.ModeSymlink != 0:
		what = "a symbolic link, not followed"
	case typ&fs.ModeNamedPipe != 0:
		what = "a FIFO"
	case typ&fs.ModeSocket != 0:
		what = "a socket"
	case typ&fs.ModeDevice != 0:
		what = "a device"
	case typ.IsDir():
		what = "a folder"
	}
	return fmt.Errorf("%w (%s)", ErrNotRegular, what)
}
