package vault

import (
	"encoding/binary"
	"errors"
	"fmt"
	"hash/crc32"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/countersign/countersign/envelope"
)

// indexName is the listing index: a cache, in the vault's folder, of what List and GC
// learn from each note, so that a note that has not changed need not be read again.
//
// An entry is keyed by the note's path and holds the note's change stamp (device,
// inode, size, mtime and ctime, in nanoseconds), the front matter values the
// pre-scans decide on (status, target and expires as envelope.Peek gives them), and
// the envelope Parse made of the note when it was parsed and valid. A note whose
// stamp, as os.Lstat gives it now, differs in any field from its entry's is read
// again, and so is a note without an entry. Tools can set a file's mtime back, but not
// its ctime: the kernel sets ctime to the current time on every write, truncation,
// rename, chmod and utime, so no edit leaves a stamp as it was. A note changed within
// racyWindow of the scan that read it is not cached at all, since a second change in
// the same tick of the file system's clock could leave the same stamp.
//
// The index is a cache and is never trusted over the file: it only answers for files
// the folder listing found and that are still regular files with the same stamp; it
// never names a file to open, and GC reads and parses a note again before removing
// it. A missing, truncated, corrupt (checksum) or foreign (other format or version)
// index, or anything but a regular file under its name, is ignored and rebuilt
// silently. It is written whole, under the writers' lock, as a private (0600) temp
// file renamed over the old one, without fsync: a crash can leave a torn index, which
// the checksum turns into a rebuild, never into a wrong answer. Write and Resolve do
// not update it (a write stays one note, one fsync); the next List or GC reads the
// notes they changed and saves the index again.
const indexName = ".countersign.index"

// indexMagic opens an index file; another format or version is foreign.
const indexMagic = "countersign vault index 2\n"

// maxIndexSize bounds what is read of an index; a larger file is rebuilt.
const maxIndexSize = 1 << 30

// racyWindow is how long after its last change a note is first cached. It covers the
// coarsest timestamp granularity of common file systems (2 s on FAT) and a little
// clock drift.
var racyWindow = 2 * time.Second

var castagnoli = crc32.MakeTable(crc32.Castagnoli)

// stamp identifies one version of a file: any write, truncation, rename, chmod or
// utime changes ctime, and a replaced file has another inode.
type stamp struct {
	dev, ino     uint64
	size         int64
	mtime, ctime int64 // nanoseconds since 1970
}

// The front matter keys whose Peek an entry keeps.
const (
	peekStatus = iota
	peekTarget
	peekExpires
	numPeeks
)

var peekKeys = [numPeeks]string{"status", "target", "expires"}

type peeked struct {
	value string
	ok    bool
}

// indexEntry is what the index knows of one version of one note. An entry is not
// changed once a scan has returned it: a note read again gets a new one.
type indexEntry struct {
	stamp     stamp
	cacheable bool // a stamp could be read
	peek      [numPeeks]peeked
	env       *envelope.Envelope // Parse's envelope; nil when not parsed, or broken
}

// newEntry makes the entry of a note from its bytes and its stat taken before they
// were read, so that a change during the read leaves a stamp that no longer matches.
func newEntry(fi fs.FileInfo, data []byte) *indexEntry {
	e := &indexEntry{}
	e.stamp, e.cacheable = stampOf(fi)
	for i, k := range peekKeys {
		e.peek[i].value, e.peek[i].ok = envelope.Peek(data, k)
	}
	return e
}

// fresh reports whether the note at path is still the version e was made from.
func (e *indexEntry) fresh(fi fs.FileInfo) bool {
	s, ok := stampOf(fi)
	return ok && e.cacheable && fi.Mode().IsRegular() && s == e.stamp
}

// index maps a note's path, relative to the envelopes folder, to its entry.
type index map[string]*indexEntry

// loadIndex reads the index; it returns nil when the index is missing or unusable.
func (v *Vault) loadIndex() index {
	data, err := readIndexFile(filepath.Join(v.dir, indexName))
	if err != nil {
		return nil
	}
	ix, err := decodeIndex(data)
	if err != nil {
		return nil
	}
	return ix
}

// readIndexFile reads the index file as readFile reads a note: never through a link,
// never waiting on a FIFO.
func readIndexFile(path string) ([]byte, error) {
	f, err := os.OpenFile(path, os.O_RDONLY|openFlags, 0)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	fi, err := f.Stat()
	if err != nil {
		return nil, err
	}
	if !fi.Mode().IsRegular() {
		return nil, notRegular(fi.Mode().Type())
	}
	if fi.Size() > maxIndexSize {
		return nil, fmt.Errorf("index larger than %d bytes", maxIndexSize)
	}
	data := make([]byte, fi.Size())
	if _, err := io.ReadFull(f, data); err != nil {
		return nil, err
	}
	return data, nil
}

// saveIndex writes the entries of the notes just scanned, when they differ from the
// index as loaded (old). Racy entries (changed less than racyWindow before start) are
// left out. The caller holds the writers' lock.
func (v *Vault) saveIndex(old index, notes []scanned, start time.Time) error {
	cutoff := start.Add(-racyWindow).UnixNano()
	keep := make(index, len(notes))
	same := old != nil
	for _, n := range notes {
		if n.entry == nil || !n.entry.cacheable || n.entry.stamp.ctime >= cutoff {
			continue
		}
		keep[n.key] = n.entry
		same = same && n.reused
	}
	if same && len(keep) == len(old) {
		return nil
	}
	return v.writeIndex(keep.encode())
}

// writeIndex replaces the index file with data: a private temp file renamed over it.
// Temp files left by a crash are removed first (the caller holds the writers' lock,
// so no other writer is making one).
func (v *Vault) writeIndex(data []byte) error {
	if entries, err := os.ReadDir(v.dir); err == nil {
		for _, e := range entries {
			if name := e.Name(); strings.HasPrefix(name, indexName+".") && strings.HasSuffix(name, ".tmp") {
				os.Remove(filepath.Join(v.dir, name))
			}
		}
	}
	f, err := os.CreateTemp(v.dir, indexName+".*.tmp")
	if err != nil {
		return fmt.Errorf("vault: index: %w", err)
	}
	_, err = f.Write(data)
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err == nil {
		err = os.Rename(f.Name(), filepath.Join(v.dir, indexName))
	}
	if err != nil {
		os.Remove(f.Name())
		return fmt.Errorf("vault: index: %w", err)
	}
	return nil
}

// encode renders the index: the magic, the count, the entries, and a CRC-32C of all
// that before it.
func (ix index) encode() []byte {
	buf := make([]byte, 0, 64+len(ix)*320)
	buf = append(buf, indexMagic...)
	buf = binary.AppendUvarint(buf, uint64(len(ix)))
	for key, e := range ix {
		buf = appendString(buf, key)
		buf = binary.AppendUvarint(buf, e.stamp.dev)
		buf = binary.AppendUvarint(buf, e.stamp.ino)
		buf = binary.AppendVarint(buf, e.stamp.size)
		buf = binary.AppendVarint(buf, e.stamp.mtime)
		buf = binary.AppendVarint(buf, e.stamp.ctime)
		for _, p := range e.peek {
			buf = appendBool(buf, p.ok)
			if p.ok {
				buf = appendString(buf, p.value)
			}
		}
		buf = appendBool(buf, e.env != nil)
		if e.env != nil {
			buf = appendEnvelope(buf, e.env)
		}
	}
	return binary.LittleEndian.AppendUint32(buf, crc32.Checksum(buf, castagnoli))
}

func appendEnvelope(buf []byte, e *envelope.Envelope) []byte {
	for _, s := range [...]string{e.OperationID, e.Action, e.Tool, string(e.Status),
		e.LastConfirmed, e.NextAction, e.Target, e.PayloadSHA256, e.Resolution,
		e.ResolvedBy, e.Response, e.Excerpt} {
		buf = appendString(buf, s)
	}
	buf = appendTime(buf, e.Created)
	buf = appendTime(buf, e.Expires)
	buf = appendBool(buf, e.ResolvedAt != nil)
	if e.ResolvedAt != nil {
		buf = appendTime(buf, *e.ResolvedAt)
	}
	buf = binary.AppendVarint(buf, int64(e.Attempts))
	buf = appendBool(buf, e.SecretWithheld)
	buf = binary.AppendUvarint(buf, uint64(len(e.Items)))
	for _, it := range e.Items {
		buf = appendString(buf, it)
	}
	return buf
}

func appendString(buf []byte, s string) []byte {
	return append(binary.AppendUvarint(buf, uint64(len(s))), s...)
}

func appendBool(buf []byte, b bool) []byte {
	if b {
		return append(buf, 1)
	}
	return append(buf, 0)
}

// appendTime writes a zero time as one byte; any other as seconds and nanoseconds.
func appendTime(buf []byte, t time.Time) []byte {
	if t.IsZero() {
		return append(buf, 0)
	}
	buf = append(buf, 1)
	buf = binary.AppendVarint(buf, t.Unix())
	return binary.AppendUvarint(buf, uint64(t.Nanosecond()))
}

var errBadIndex = errors.New("vault: index unreadable")

// decodeIndex reads what encode wrote. It returns errBadIndex for anything else: a
// foreign magic, a checksum that does not match, a truncated or overlong body, an
// envelope whose operation id does not name its note.
func decodeIndex(data []byte) (index, error) {
	if len(data) < len(indexMagic)+4 || string(data[:len(indexMagic)]) != indexMagic {
		return nil, errBadIndex
	}
	body, sum := data[:len(data)-4], binary.LittleEndian.Uint32(data[len(data)-4:])
	if crc32.Checksum(body, castagnoli) != sum {
		return nil, errBadIndex
	}
	// One string holds every key and field: one allocation, not one per string.
	r := &reader{b: body, s: string(body), off: len(indexMagic)}
	count := r.uvarint()
	if count > uint64(len(body)) {
		return nil, errBadIndex
	}
	ix := make(index, count)
	for range count {
		key := r.str()
		e := &indexEntry{cacheable: true}
		e.stamp.dev, e.stamp.ino = r.uvarint(), r.uvarint()
		e.stamp.size, e.stamp.mtime, e.stamp.ctime = r.varint(), r.varint(), r.varint()
		for i := range e.peek {
			if e.peek[i].ok = r.bool(); e.peek[i].ok {
				e.peek[i].value = r.str()
			}
		}
		if r.bool() {
			e.env = r.envelope()
			if !r.bad && e.env.OperationID != strings.TrimSuffix(filepath.Base(key), ".md") {
				return nil, errBadIndex
			}
		}
		if r.bad {
			return nil, errBadIndex
		}
		ix[key] = e
	}
	if r.bad || r.off != len(body) || len(ix) != int(count) {
		return nil, errBadIndex
	}
	return ix, nil
}

// reader decodes an index body; after the first malformed field every read returns
// zero and bad is set.
type reader struct {
	b   []byte
	s   string // b as a string, for substrings
	off int
	bad bool
}

func (r *reader) uvarint() uint64 {
	if r.bad {
		return 0
	}
	v, n := binary.Uvarint(r.b[r.off:])
	if n <= 0 {
		r.bad = true
		return 0
	}
	r.off += n
	return v
}

func (r *reader) varint() int64 {
	if r.bad {
		return 0
	}
	v, n := binary.Varint(r.b[r.off:])
	if n <= 0 {
		r.bad = true
		return 0
	}
	r.off += n
	return v
}

func (r *reader) str() string {
	n := r.uvarint()
	if r.bad || n > uint64(len(r.b)-r.off) {
		r.bad = true
		return ""
	}
	s := r.s[r.off : r.off+int(n)]
	r.off += int(n)
	return s
}

func (r *reader) bool() bool {
	if r.bad || r.off >= len(r.b) || r.b[r.off] > 1 {
		r.bad = true
		return false
	}
	r.off++
	return r.b[r.off-1] == 1
}

func (r *reader) time() time.Time {
	if !r.bool() {
		return time.Time{}
	}
	sec, nsec := r.varint(), r.uvarint()
	if nsec >= 1e9 {
		r.bad = true
		return time.Time{}
	}
	return time.Unix(sec, int64(nsec)).UTC()
}

func (r *reader) envelope() *envelope.Envelope {
	e := &envelope.Envelope{}
	for _, s := range [...]*string{&e.OperationID, &e.Action, &e.Tool, nil,
		&e.LastConfirmed, &e.NextAction, &e.Target, &e.PayloadSHA256, &e.Resolution,
		&e.ResolvedBy, &e.Response, &e.Excerpt} {
		if s == nil {
			e.Status = envelope.Status(r.str())
			continue
		}
		*s = r.str()
	}
	e.Created, e.Expires = r.time(), r.time()
	if r.bool() {
		at := r.time()
		e.ResolvedAt = &at
	}
	e.Attempts = int(r.varint())
	e.SecretWithheld = r.bool()
	n := r.uvarint()
	if n > maxIndexSize {
		r.bad = true
		return e
	}
	for range n {
		e.Items = append(e.Items, r.str())
		if r.bad {
			break
		}
	}
	return e
}

// get returns the Peek of one of the keys an entry keeps (peekStatus, ...).
func (e *indexEntry) get(key int) (string, bool) { return e.peek[key].value, e.peek[key].ok }
