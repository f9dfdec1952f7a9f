// Package filestore keeps the files a payload sends by their content: a file
// is read once, when its call is prepared, and stored under the SHA-256 of its
// bytes, which the payload's hash covers. What is sent later is read back from
// here and checked against that sum, so an approval binds to bytes, not to a
// path or an address whose content may change.
package filestore

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
)

// ErrTooLarge is Put's error for content longer than its limit; nothing is
// stored.
var ErrTooLarge = errors.New("filestore: the file is larger than its limit")

// ErrChanged is Open's error for stored bytes that no longer hash to their
// name: the file was altered on disk, and must not be sent as the approved one.
var ErrChanged = errors.New("filestore: the stored file no longer matches its SHA-256")

// ErrMissing is Open's error for a sum nothing is stored under.
var ErrMissing = errors.New("filestore: no file is stored under this SHA-256")

// Store is a folder of files named by their SHA-256, two hex digits a
// subfolder. It is safe for concurrent use, by processes too: a file is
// written under a temporary name and renamed into place whole.
type Store struct{ dir string }

// Open returns the store in dir, creating the folder. Its folders are mode
// 0700 whatever the umask (the files may be what only the bot should read):
// a umask never widens a mode, but one such as 0277 would leave a folder the
// bot cannot write, and a folder made by hand may be open to others.
func Open(dir string) (*Store, error) {
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return nil, fmt.Errorf("filestore: %w", err)
	}
	if err := os.Chmod(dir, 0o700); err != nil {
		return nil, fmt.Errorf("filestore: %w", err)
	}
	return &Store{dir: dir}, nil
}

// The file's sync and its rename into place, in that order: a crash after
// the rename must leave the whole file under its name, never a name over
// bytes the disk has not kept. Variables only so that the package's test can
// see the order.
var (
	syncFile = (*os.File).Sync
	rename   = os.Rename
)

// mkdir makes one of the store's subfolders, mode 0700 whatever the umask.
func mkdir(dir string) error {
	err := os.Mkdir(dir, 0o700)
	if errors.Is(err, os.ErrExist) {
		return nil
	}
	if err != nil {
		return err
	}
	return os.Chmod(dir, 0o700)
}

func (s *Store) path(sum string) string { return filepath.Join(s.dir, sum[:2], sum) }

// Put reads r to its end, at most limit bytes, and stores the bytes under
// their SHA-256, which it returns with their size. Storing bytes already
// stored changes nothing.
func (s *Store) Put(ctx context.Context, r io.Reader, limit int64) (string, int64, error) {
	tmp, err := os.CreateTemp(s.dir, ".put-*")
	if err != nil {
		return "", 0, fmt.Errorf("filestore: %w", err)
	}
	defer os.Remove(tmp.Name()) // gone after the rename; removed on any error
	h := sha256.New()
	n, err := io.Copy(io.MultiWriter(tmp, h), io.LimitReader(readerCtx{ctx, r}, limit+1))
	if err == nil && n > limit {
		err = fmt.Errorf("%w (%d bytes)", ErrTooLarge, limit)
	}
	if err == nil {
		err = syncFile(tmp)
	}
	if cerr := tmp.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		return "", 0, fmt.Errorf("filestore: %w", err)
	}
	sum := hex.EncodeToString(h.Sum(nil))
	if err := mkdir(filepath.Dir(s.path(sum))); err != nil {
		return "", 0, fmt.Errorf("filestore: %w", err)
	}
	if err := rename(tmp.Name(), s.path(sum)); err != nil {
		return "", 0, fmt.Errorf("filestore: %w", err)
	}
	return sum, n, nil
}

// Open returns the bytes stored under sum, after checking that they still
// hash to it (ErrChanged), or ErrMissing.
func (s *Store) Open(_ context.Context, sum string) ([]byte, error) {
	if len(sum) != sha256.Size*2 || !isHex(sum) {
		return nil, fmt.Errorf("filestore: %q is not a SHA-256: %w", sum, ErrMissing)
	}
	b, err := os.ReadFile(s.path(sum))
	if errors.Is(err, os.ErrNotExist) {
		return nil, fmt.Errorf("filestore: %s: %w", sum[:12], ErrMissing)
	}
	if err != nil {
		return nil, fmt.Errorf("filestore: %w", err)
	}
	if got := sha256.Sum256(b); hex.EncodeToString(got[:]) != sum {
		return nil, fmt.Errorf("filestore: %s: %w", sum[:12], ErrChanged)
	}
	return b, nil
}

func isHex(s string) bool {
	for _, c := range s {
		if !('0' <= c && c <= '9' || 'a' <= c && c <= 'f') {
			return false
		}
	}
	return true
}

// readerCtx stops a long read when ctx ends (a download that stalls).
type readerCtx struct {
	ctx context.Context
	r   io.Reader
}

func (r readerCtx) Read(p []byte) (int, error) {
	if err := r.ctx.Err(); err != nil {
		return 0, err
	}
	return r.r.Read(p)
}
