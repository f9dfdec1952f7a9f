package vault

import (
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"strings"

	"github.com/countersign/countersign/envelope"
)

// rename is os.Rename; tests replace it to interrupt a write just before the rename.
var rename = os.Rename

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
		err = f.Sync()
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
	err = d.Sync()
	if cerr := d.Close(); err == nil {
		err = cerr
	}
	return err
}

// mkdirAllSynced creates dir and its missing parents (mode 0700), fsyncing the parent
// of each folder it creates so that a note's folder survives a crash with the note.
func mkdirAllSynced(dir string) error {
	if fi, err := os.Stat(dir); err == nil {
		if !fi.IsDir() {
			return fmt.Errorf("%s: not a directory", dir)
		}
		return nil
	}
	parent := filepath.Dir(dir)
	if parent != dir {
		if err := mkdirAllSynced(parent); err != nil {
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

// readNote reads and parses the note at path. It returns an error wrapping
// ErrNotFound when the file is gone, and a *BrokenError for anything else that keeps
// it from being an envelope named by its file. The file is only read.
func readNote(path string) (envelope.Envelope, error) {
	data, err := readFile(path, make([]byte, 0, 4096))
	if errors.Is(err, fs.ErrNotExist) {
		return envelope.Envelope{}, fmt.Errorf("%w: %w", ErrNotFound, err)
	}
	if err != nil {
		return envelope.Envelope{}, &BrokenError{Path: path, Err: err}
	}
	e, err := parseNote(path, data)
	if err != nil {
		return envelope.Envelope{}, &BrokenError{Path: path, Err: err}
	}
	return e, nil
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

// readFile appends the file's bytes to buf, up to maxNoteSize.
func readFile(path string, buf []byte) ([]byte, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	for {
		if len(buf) == cap(buf) {
			if len(buf) > maxNoteSize {
				return nil, errTooLarge
			}
			buf = append(buf, 0)[:len(buf)]
		}
		n, err := f.Read(buf[len(buf):cap(buf)])
		buf = buf[:len(buf)+n]
		if errors.Is(err, io.EOF) {
			return buf, nil
		}
		if err != nil {
			return nil, err
		}
	}
}
