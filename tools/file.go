package tools

import (
	"context"
	"io"
)

// FileStore keeps files by their content. Put reads r to its end (at most
// limit bytes, else an error that says so) and stores the bytes under their
// SHA-256; Open returns the bytes stored under sum, checked against it, so
// that a file changed on disk after its approval is never sent.
type FileStore interface {
	Put(ctx context.Context, r io.Reader, limit int64) (sum string, size int64, err error)
	Open(ctx context.Context, sum string) ([]byte, error)
}
