package vault

import (
	"io/fs"
	"testing"
	"time"
)

// IndexName is the listing index's file name in the vault's folder.
const IndexName = indexName

// SetRacyWindow sets how long after its last change a note is first cached, for the
// length of the test. Tests that need a note cached set it to zero and wait for the
// file system's clock to move past the note's change (see waitTick).
func SetRacyWindow(t testing.TB, d time.Duration) {
	old := racyWindow
	racyWindow = d
	t.Cleanup(func() { racyWindow = old })
}

// NoteReads returns how many notes the package has read so far.
func NoteReads() int64 { return noteReads.Load() }

// Ctime returns a file's change time in nanoseconds, as the index stamps it.
func Ctime(fi fs.FileInfo) int64 {
	s, _ := stampOf(fi)
	return s.ctime
}
