package vault

import (
	"cmp"
	"encoding/json"
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
// as envelope.Peek read it (e.peek), so that it need not be parsed.
func (f Filter) skip(e *indexEntry) bool {
	if f.Unresolved {
		if s, ok := e.get(peekStatus); ok && s != string(envelope.StatusUnknown) {
			return true
		}
	}
	if f.Target != "" {
		if t, ok := e.get(peekTarget); ok && t != f.Target {
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

// Summary is a note as scripts and agents read it (countersign vault -json, the MCP
// tools): its front matter, keyed as the note has it, and its path.
type Summary struct {
	OperationID   string          `json:"operation_id"`
	Action        string          `json:"action"`
	Tool          string          `json:"tool"`
	Status        envelope.Status `json:"status"`
	LastConfirmed string          `json:"last_confirmed"`
	NextAction    string          `json:"next_action"`
	Target        string          `json:"target"`
	PayloadSHA256 string          `json:"payload_sha256"`
	Created       time.Time       `json:"created"`
	Expires       time.Time       `json:"expires"`
	Attempts      int             `json:"attempts"`
	Resolution    string          `json:"resolution,omitempty"`
	ResolvedBy    string          `json:"resolved_by,omitempty"`
	ResolvedAt    *time.Time      `json:"resolved_at,omitempty"`
	Path          string          `json:"path"`
}

// Summary returns the note's Summary.
func (n Note) Summary() Summary {
	e := n.Envelope
	return Summary{OperationID: e.OperationID, Action: e.Action, Tool: e.Tool, Status: e.Status,
		LastConfirmed: e.LastConfirmed, NextAction: e.NextAction, Target: e.Target, PayloadSHA256: e.PayloadSHA256,
		Created: e.Created, Expires: e.Expires, Attempts: e.Attempts,
		Resolution: e.Resolution, ResolvedBy: e.ResolvedBy, ResolvedAt: e.ResolvedAt, Path: n.Path}
}

// MarshalJSON writes the note's Summary.
func (n Note) MarshalJSON() ([]byte, error) { return json.Marshal(n.Summary()) }

// List returns the notes that match f, sorted by Created then operation id, and the
// broken notes it met (sorted by path), which it skips. err reports a vault folder that
// cannot be listed. No note is modified.
//
// A note is read only when the index (see indexName) has no entry for its present
// stamp; otherwise List takes from the entry what reading it would give. Notes are
// read in parallel. With Unresolved or Target set, a note whose front matter plainly
// states another status or target (see envelope.Peek) is passed over without a full
// parse, so a broken note that plainly states, say, a resolved status is reported only
// by a List without those filters. A symbolic link or special file where a note or
// folder should be is reported whatever the filter, unopened. When it read any note
// again, List saves the index, if it can take the writers' lock without waiting.
func (v *Vault) List(f Filter) (notes []Note, broken []BrokenError, err error) {
	if f.OlderThan > 0 && f.Now.IsZero() {
		f.Now = time.Now()
	}
	sc, err := v.scan(func(e *indexEntry) need {
		if f.skip(e) {
			return needNothing
		}
		return needEnvelope
	})
	if err != nil {
		return nil, nil, fmt.Errorf("vault: list: %w", err)
	}
	if unlock, ok := v.tryLock(); ok {
		v.saveIndex(sc.old, sc.notes, sc.start) // a cache: the next scan retries a failed save
		unlock()
	}
	var matched []int // sorted as indices: a Note is too large to swap 100,000 times
	for i, n := range sc.notes {
		switch {
		case n.broken != nil:
			broken = append(broken, *n.broken)
		case n.passed: // plainly filtered out, or gone
		case f.match(n.Envelope):
			matched = append(matched, i)
		}
	}
	slices.SortFunc(matched, func(i, j int) int {
		a, b := &sc.notes[i].Envelope, &sc.notes[j].Envelope
		return cmp.Or(a.Created.Compare(b.Created), strings.Compare(a.OperationID, b.OperationID))
	})
	if len(matched) > 0 {
		notes = make([]Note, len(matched))
		for k, i := range matched {
			notes[k] = sc.notes[i].Note
		}
	}
	slices.SortFunc(broken, func(a, b BrokenError) int { return strings.Compare(a.Path, b.Path) })
	return notes, broken, nil
}

// GC removes the resolved notes whose Expires is before now (a zero Expires never
// expires) and returns their paths, sorted. It never removes an unresolved or broken
// note. A note that plainly states an unknown status or a later expiry (see
// envelope.Peek) is kept without a parse, and is not read at all when the index
// answers for it; every other note is read and parsed, so that GC removes only what
// the note itself says may go, never a note on the index's word. Month and year
// folders it empties are removed too. A failed removal does not stop the others; the
// error joins every failure.
func (v *Vault) GC(now time.Time) (removed []string, err error) {
	unlock, err := v.lock()
	if err != nil {
		return nil, err
	}
	defer unlock()
	sc, err := v.scan(func(e *indexEntry) need {
		if keep(e, now) {
			return needNothing
		}
		return needFile
	})
	if err != nil {
		return nil, fmt.Errorf("vault: gc: %w", err)
	}
	var errs []error
	dirs := map[string]bool{}
	for i := range sc.notes {
		n := &sc.notes[i]
		if n.broken != nil || n.passed || !expired(n.Envelope, now) {
			continue
		}
		if err := os.Remove(n.Path); err != nil && !errors.Is(err, fs.ErrNotExist) {
			errs = append(errs, err)
			continue
		}
		n.entry, n.reused = nil, false
		removed = append(removed, n.Path)
		dirs[filepath.Dir(n.Path)] = true
	}
	slices.Sort(removed)
	errs = append(errs, pruneDirs(dirs))
	v.saveIndex(sc.old, sc.notes, sc.start) // a cache: the next scan retries a failed save
	if err := errors.Join(errs...); err != nil {
		return removed, fmt.Errorf("vault: gc: %w", err)
	}
	return removed, nil
}

// expired reports whether GC may remove a note with this envelope: resolved, and
// expiring before now.
func expired(e envelope.Envelope, now time.Time) bool {
	return !e.Unresolved() && !e.Expires.IsZero() && e.Expires.Before(now)
}

// keep reports whether a note plainly must stay, as envelope.Peek read it: unresolved,
// or expiring at or after now.
func keep(e *indexEntry, now time.Time) bool {
	if s, ok := e.get(peekStatus); ok && s == string(envelope.StatusUnknown) {
		return true
	}
	if x, ok := e.get(peekExpires); ok {
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

// scanned is one note file as scan found it.
type scanned struct {
	Note
	broken *BrokenError
	passed bool        // skipped without a parse, or removed between listing and reading
	key    string      // the note's key in the index
	entry  *indexEntry // what the index should keep of the note; nil: nothing
	reused bool        // entry is the one the index held: the note was not read
}

// scanResult is one scan of the vault: every note, the index as it was loaded (nil
// when missing or unusable), and when the scan began (for racyWindow).
type scanResult struct {
	notes []scanned
	old   index
	start time.Time
}

// need is what a scan needs of a note, as its caller decides from the note's entry.
type need int

const (
	needNothing  need = iota // pass the note over
	needEnvelope             // its envelope: from the index when it answers for the note
	needFile                 // its envelope, read and parsed from the file by this scan
)

// scan looks at every note, using one worker per CPU, each with its own read buffer.
// want says, from a note's entry, what is needed of it; a note the index answers for
// is not read unless want says needFile. A link or special file where a note or a
// folder should be is returned as broken, unopened.
func (v *Vault) scan(want func(*indexEntry) need) (*scanResult, error) {
	sc := &scanResult{start: time.Now()}
	entries, skipped, err := v.noteEntries()
	if err != nil {
		return nil, err
	}
	sc.old = v.loadIndex()
	root := filepath.Join(v.dir, envelopesDir) + string(filepath.Separator)
	sc.notes = make([]scanned, len(entries), len(entries)+len(skipped))
	var next atomic.Int64
	var wg sync.WaitGroup
	for range min(runtime.GOMAXPROCS(0), len(entries)) {
		wg.Go(func() {
			buf := make([]byte, 0, 4096)
			for i := int(next.Add(1)) - 1; i < len(entries); i = int(next.Add(1)) - 1 {
				key := strings.TrimPrefix(entries[i].path, root)
				sc.notes[i] = scanNote(entries[i], key, sc.old[key], &buf, want)
			}
		})
	}
	wg.Wait()
	for _, b := range skipped {
		sc.notes = append(sc.notes, scanned{Note: Note{Path: b.Path}, broken: &b})
	}
	return sc, nil
}

// scanNote looks at one note: through its index entry old when the note's stamp still
// matches it and it holds what want needs, otherwise by reading the file.
func scanNote(entry noteEntry, key string, old *indexEntry, buf *[]byte, want func(*indexEntry) need) scanned {
	n := scanned{Note: Note{Path: entry.path}, key: key}
	if old != nil && entry.typ.IsRegular() {
		fi, err := os.Lstat(entry.path)
		switch {
		case errors.Is(err, fs.ErrNotExist):
			n.passed = true
			return n
		case err != nil || !old.fresh(fi):
		case want(old) == needNothing:
			n.entry, n.reused, n.passed = old, true, true
			return n
		case want(old) == needEnvelope && old.env != nil:
			n.entry, n.reused, n.Envelope = old, true, *old.env
			return n
		}
	}
	data, fi, err := readFile(entry.path, entry.typ, (*buf)[:0])
	switch {
	case errors.Is(err, fs.ErrNotExist):
		n.passed = true
		return n
	case err != nil:
		n.broken = &BrokenError{Path: entry.path, Err: err}
		return n
	}
	*buf = data
	n.entry = newEntry(fi, data)
	if want(n.entry) == needNothing {
		n.passed = true
		return n
	}
	env, err := parseNote(entry.path, data)
	if err != nil { // kept without an envelope: read again whenever it is wanted
		n.broken = &BrokenError{Path: entry.path, Err: err}
		return n
	}
	n.entry.env, n.Envelope = &env, env
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
