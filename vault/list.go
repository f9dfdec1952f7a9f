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
// status is reported only by a List without those filters. A symbolic link or special
// file where a note or folder should be is reported whatever the filter, unopened.
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
// note for which skip returns true is not parsed. A link or special file where a note
// or a folder should be is returned as broken, unopened.
func (v *Vault) scan(skip func(data []byte) bool) ([]scanned, error) {
	entries, skipped, err := v.noteEntries()
	if err != nil {
		return nil, err
	}
	out := make([]scanned, len(entries), len(entries)+len(skipped))
	var next atomic.Int64
	var wg sync.WaitGroup
	for range min(runtime.GOMAXPROCS(0), len(entries)) {
		wg.Go(func() {
			buf := make([]byte, 0, 4096)
			for i := int(next.Add(1)) - 1; i < len(entries); i = int(next.Add(1)) - 1 {
				out[i] = readScanned(entries[i], &buf, skip)
			}
		})
	}
	wg.Wait()
	for _, b := range skipped {
		out = append(out, scanned{Note: Note{Path: b.Path}, broken: &b})
	}
	return out, nil
}

func readScanned(entry noteEntry, buf *[]byte, skip func([]byte) bool) scanned {
	n := scanned{Note: Note{Path: entry.path}}
	data, err := readFile(entry.path, entry.typ, (*buf)[:0])
	switch {
	case errors.Is(err, fs.ErrNotExist):
		n.passed = true
		return n
	case err != nil:
		n.broken = &BrokenError{Path: entry.path, Err: err}
		return n
	}
	*buf = data
	if skip(data) {
		n.passed = true
		return n
	}
	n.Envelope, err = parseNote(entry.path, data)
	if err != nil {
		n.broken = &BrokenError{Path: entry.path, Err: err}
	}
	return n
}

// noteEntry is a note's path and its type as its folder listing gives it.
type noteEntry struct {
	path string
	typ  fs.FileMode
}

// noteEntries lists envelopes/*/*/*.md, skipping hidden names (temp files among
// them), and returns as skipped the year and month folders that are symbolic links,
// which it does not follow. It reads folder listings only: no stat per note.
func (v *Vault) noteEntries() ([]noteEntry, []BrokenError, error) {
	years, skipped, err := v.years()
	if err != nil {
		return nil, nil, err
	}
	var notes []noteEntry
	for _, year := range years {
		months, links, err := subdirs(year)
		if err != nil {
			return nil, nil, err
		}
		skipped = append(skipped, links...)
		for _, month := range months {
			entries, err := readDir(month)
			if err != nil {
				return nil, nil, err
			}
			for _, e := range entries {
				if name := e.Name(); strings.HasSuffix(name, ".md") && !strings.HasPrefix(name, ".") {
					notes = append(notes, noteEntry{filepath.Join(month, name), e.Type()})
				}
			}
		}
	}
	return notes, skipped, nil
}

// years returns the year folders, and the envelopes folder or year folders that are
// symbolic links (as broken, not followed).
func (v *Vault) years() ([]string, []BrokenError, error) {
	root := filepath.Join(v.dir, envelopesDir)
	fi, err := os.Lstat(root)
	switch {
	case errors.Is(err, fs.ErrNotExist):
		return nil, nil, nil
	case err != nil:
		return nil, nil, err
	case fi.Mode().Type()&fs.ModeSymlink != 0:
		return nil, []BrokenError{{Path: root, Err: notRegular(fs.ModeSymlink)}}, nil
	}
	return subdirs(root)
}

// subdirs returns the paths of dir's visible subfolders, and its visible symbolic
// links (as broken: a link is never followed, even to a folder); none when dir is
// missing. Other files are ignored.
func subdirs(dir string) ([]string, []BrokenError, error) {
	entries, err := readDir(dir)
	if err != nil {
		return nil, nil, err
	}
	var dirs []string
	var links []BrokenError
	for _, e := range entries {
		switch {
		case strings.HasPrefix(e.Name(), "."):
		case e.IsDir():
			dirs = append(dirs, filepath.Join(dir, e.Name()))
		case e.Type()&fs.ModeSymlink != 0:
			links = append(links, BrokenError{Path: filepath.Join(dir, e.Name()), Err: notRegular(fs.ModeSymlink)})
		}
	}
	return dirs, links, nil
}

// readDir returns dir's entries, unsorted, with their types as the listing gives them
// (no stat per entry where the file system reports types); none when dir is missing.
func readDir(dir string) ([]fs.DirEntry, error) {
	f, err := os.Open(dir)
	if errors.Is(err, fs.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	defer f.Close()
	return f.ReadDir(-1)
}
