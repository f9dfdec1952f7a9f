package vault

import (
	"cmp"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"runtime"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/countersign/countersign/envelope"
)

// Filter selects notes for List. The zero Filter selects every readable note.
type Filter struct {
	Unresolved bool          // only notes whose status is unknown
	Target     string        // only notes for this chat id or @channel, when not empty
	OlderThan  time.Duration // only notes created more than this long before Now, when > 0
	Now        time.Time     // the clock for OlderThan; zero means time.Now()
}

func (f Filter) match(e envelope.Envelope) bool {
	if f.Unresolved && !e.Unresolved() {
		return false
	}
	if f.Target != "" && e.Target != f.Target {
		return false
	}
	return f.OlderThan <= 0 || e.Created.Before(f.Now.Add(-f.OlderThan))
}

// skip reports whether a note plainly does not match the status or target filter,
// as envelope.Peek reads it, so that it need not be parsed.
func (f Filter) skip(data []byte) bool {
	if f.Unresolved {
		if s, ok := envelope.Peek(data, "status"); ok && s != string(envelope.StatusUnknown) {
			return true
		}
	}
	if f.Target != "" {
		if t, ok := envelope.Peek(data, "target"); ok && t != f.Target {
			return true
		}
	}
	return false
}

// Note is one readable note and its envelope.
type Note struct {
	Path     string // absolute
	Envelope envelope.Envelope
}

// List returns the notes that match f, sorted by Created then operation id, and the
// broken notes it met (sorted by path), which it skips. err reports a vault folder that
// cannot be listed. Nothing is modified.
//
// Each note is read once, in parallel. With Unresolved or Target set, a note whose
// front matter plainly states another status or target (see envelope.Peek) is passed
// over without a full parse, so a broken note that plainly states, say, a resolved
// status is reported only by a List without those filters.
func (v *Vault) List(f Filter) (notes []Note, broken []BrokenError, err error) {
	if f.OlderThan > 0 && f.Now.IsZero() {
		f.Now = time.Now()
	}
	all, err := v.scan(f.skip)
	if err != nil {
		return nil, nil, fmt.Errorf("vault: list: %w", err)
	}
	for _, n := range all {
		switch {
		case n.broken != nil:
			broken = append(broken, *n.broken)
		case n.passed: // plainly filtered out, or gone
		case f.match(n.Envelope):
			notes = append(notes, n.Note)
		}
	}
	slices.SortFunc(notes, func(a, b Note) int {
		return cmp.Or(a.Envelope.Created.Compare(b.Envelope.Created),
			strings.Compare(a.Envelope.OperationID, b.Envelope.OperationID))
	})
	slices.SortFunc(broken, func(a, b BrokenError) int { return strings.Compare(a.Path, b.Path) })
	return notes, broken, nil
}

// GC removes the resolved notes whose Expires is before now (a zero Expires never
// expires) and returns their paths, sorted. It never removes an unresolved or broken
// note, and parses only the notes that do not plainly state an unknown status or a
// later expiry (see envelope.Peek). Month and year folders it empties are removed too.
// A failed removal does not stop the others; the error joins every failure.
func (v *Vault) GC(now time.Time) (removed []string, err error) {
	unlock, err := v.lock()
	if err != nil {
		return nil, err
	}
	defer unlock()
	all, err := v.scan(func(data []byte) bool { return keep(data, now) })
	if err != nil {
		return nil, fmt.Errorf("vault: gc: %w", err)
	}
	var errs []error
	dirs := map[string]bool{}
	for _, n := range all {
		e := n.Envelope
		if n.broken != nil || n.passed || e.Unresolved() || e.Expires.IsZero() || !e.Expires.Before(now) {
			continue
		}
		if err := os.Remove(n.Path); err != nil && !errors.Is(err, fs.ErrNotExist) {
			errs = append(errs, err)
			continue
		}
		removed = append(removed, n.Path)
		dirs[filepath.Dir(n.Path)] = true
	}
	slices.Sort(removed)
	errs = append(errs, pruneDirs(dirs))
	if err := errors.Join(errs...); err != nil {
		return removed, fmt.Errorf("vault: gc: %w", err)
	}
	return removed, nil
}

// keep reports whether a note plainly must stay: unresolved, or expiring at or after
// now.
func keep(data []byte, now time.Time) bool {
	if s, ok := envelope.Peek(data, "status"); ok && s == string(envelope.StatusUnknown) {
		return true
	}
	if x, ok := envelope.Peek(data, "expires"); ok {
		at, err := time.Parse(time.RFC3339Nano, x)
		return err == nil && !at.Before(now)
	}
	return false
}

// pruneDirs makes the removals in the month folders durable, and removes the month
// and year folders left empty.
func pruneDirs(months map[string]bool) error {
	var errs []error
	for month := range months {
		year := filepath.Dir(month)
		if os.Remove(month) != nil { // not empty: keep it, but persist the removals
			errs = append(errs, syncDir(month))
			continue
		}
		if os.Remove(year) != nil {
			errs = append(errs, syncDir(year))
			continue
		}
		errs = append(errs, syncDir(filepath.Dir(year)))
	}
	return errors.Join(errs...)
}

// scanned is one note file as read by scan.
type scanned struct {
	Note
	broken *BrokenError
	passed bool // skipped without a parse, or removed between listing and reading
}

// scan reads every note, using one worker per CPU, each with its own read buffer. A
// note for which skip returns true is not parsed.
func (v *Vault) scan(skip func(data []byte) bool) ([]scanned, error) {
	paths, err := v.notePaths()
	if err != nil {
		return nil, err
	}
	out := make([]scanned, len(paths))
	var next atomic.Int64
	var wg sync.WaitGroup
	for range min(runtime.GOMAXPROCS(0), len(paths)) {
		wg.Go(func() {
			buf := make([]byte, 0, 4096)
			for i := int(next.Add(1)) - 1; i < len(paths); i = int(next.Add(1)) - 1 {
				out[i] = readScanned(paths[i], &buf, skip)
			}
		})
	}
	wg.Wait()
	return out, nil
}

func readScanned(path string, buf *[]byte, skip func([]byte) bool) scanned {
	n := scanned{Note: Note{Path: path}}
	data, err := readFile(path, (*buf)[:0])
	switch {
	case errors.Is(err, fs.ErrNotExist):
		n.passed = true
		return n
	case err != nil:
		n.broken = &BrokenError{Path: path, Err: err}
		return n
	}
	*buf = data
	if skip(data) {
		n.passed = true
		return n
	}
	n.Envelope, err = parseNote(path, data)
	if err != nil {
		n.broken = &BrokenError{Path: path, Err: err}
	}
	return n
}

// notePaths lists envelopes/*/*/*.md, skipping hidden names (temp files among them).
// It reads folder names only: no stat per note.
func (v *Vault) notePaths() ([]string, error) {
	root := filepath.Join(v.dir, envelopesDir)
	years, err := subdirs(root)
	if err != nil {
		return nil, err
	}
	var paths []string
	for _, year := range years {
		months, err := subdirs(year)
		if err != nil {
			return nil, err
		}
		for _, month := range months {
			names, err := names(month)
			if err != nil {
				return nil, err
			}
			for _, name := range names {
				if strings.HasSuffix(name, ".md") && !strings.HasPrefix(name, ".") {
					paths = append(paths, filepath.Join(month, name))
				}
			}
		}
	}
	return paths, nil
}

// subdirs returns the paths of dir's visible subfolders; none when dir is missing.
func subdirs(dir string) ([]string, error) {
	entries, err := os.ReadDir(dir)
	if errors.Is(err, fs.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	var dirs []string
	for _, e := range entries {
		if e.IsDir() && !strings.HasPrefix(e.Name(), ".") {
			dirs = append(dirs, filepath.Join(dir, e.Name()))
		}
	}
	return dirs, nil
}

// names returns the unsorted entry names of dir; none when dir is missing.
func names(dir string) ([]string, error) {
	f, err := os.Open(dir)
	if errors.Is(err, fs.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	defer f.Close()
	return f.Readdirnames(-1)
}
