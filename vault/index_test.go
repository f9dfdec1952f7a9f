//go:build linux || darwin

package vault_test

import (
	"bytes"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/countersign/countersign/envelope"
	"github.com/countersign/countersign/vault"
)

// waitTick waits until a file changed now gets a later ctime than path's last change,
// so that a note cached by a List that follows is cached for good (not racy), and an
// edit that follows gives it a new ctime. It writes a probe file in the vault's folder
// until the file system's clock has moved on.
func waitTick(t *testing.T, v *vault.Vault, path string) {
	t.Helper()
	fi, err := os.Lstat(path)
	if err != nil {
		t.Fatal(err)
	}
	probe := filepath.Join(v.Dir(), ".tick")
	defer os.Remove(probe)
	for end := time.Now().Add(deadline); time.Now().Before(end); {
		if err := os.WriteFile(probe, []byte(time.Now().String()), 0o600); err != nil {
			t.Fatal(err)
		}
		p, err := os.Lstat(probe)
		if err != nil {
			t.Fatal(err)
		}
		if vault.Ctime(p) > vault.Ctime(fi) {
			return
		}
	}
	t.Fatalf("the file system's clock did not move past %s's change within %s", path, deadline)
}

// reads returns how many notes fn made the vault read.
func reads(fn func()) int64 {
	before := vault.NoteReads()
	fn()
	return vault.NoteReads() - before
}

func list(t *testing.T, v *vault.Vault, f vault.Filter) []vault.Note {
	t.Helper()
	notes, broken, err := v.List(f)
	if err != nil || len(broken) != 0 {
		t.Fatalf("List(%+v): %v, broken %v", f, err, broken)
	}
	return notes
}

// ids returns the operation ids and statuses of notes, in order.
func ids(notes []vault.Note) []string {
	var out []string
	for _, n := range notes {
		out = append(out, n.Envelope.OperationID+" "+string(n.Envelope.Status)+" "+n.Envelope.Target)
	}
	return out
}

// cachedVault returns a vault holding an unresolved note (op-u) and a resolved one
// (op-r), both cached in the index, and their paths.
func cachedVault(t *testing.T) (*vault.Vault, string, string) {
	t.Helper()
	vault.SetRacyWindow(t, 0)
	v := open(t)
	u := write(t, v, newEnvelope("op-u", t0))
	e := newEnvelope("op-r", t0.Add(time.Minute))
	e.Resolve(true, "@alice", t0)
	r := write(t, v, e)
	waitTick(t, v, r)
	list(t, v, vault.Filter{})
	if n := reads(func() { list(t, v, vault.Filter{}) }); n != 0 {
		t.Fatalf("a List over a fresh index read %d notes, want 0", n)
	}
	return v, u, r
}

// sameSizeEdit rewrites the note at path in place with note, padded with a YAML
// comment to the old size, and sets its access and modification times back: only its
// ctime tells that it changed.
func sameSizeEdit(t *testing.T, path, note string) {
	t.Helper()
	fi, err := os.Stat(path)
	if err != nil {
		t.Fatal(err)
	}
	pad := int(fi.Size()) - len(note)
	switch {
	case pad == 1 || pad < 0:
		t.Fatalf("cannot pad an edit of %d bytes to %d", len(note), fi.Size())
	case pad > 1:
		note = "---\n#" + strings.Repeat("x", pad-2) + "\n" + strings.TrimPrefix(note, "---\n")
	}
	f, err := os.OpenFile(path, os.O_WRONLY, 0) // in place: same inode
	if err != nil {
		t.Fatal(err)
	}
	if _, err := f.WriteAt([]byte(note), 0); err != nil {
		t.Fatal(err)
	}
	if err := f.Close(); err != nil {
		t.Fatal(err)
	}
	if err := os.Chtimes(path, fi.ModTime(), fi.ModTime()); err != nil {
		t.Fatal(err)
	}
	after, err := os.Stat(path)
	if err != nil || after.Size() != fi.Size() || !after.ModTime().Equal(fi.ModTime()) {
		t.Fatalf("edit left size %d mtime %v (%v), want %d and %v", after.Size(), after.ModTime(), err, fi.Size(), fi.ModTime())
	}
}

// A hand edit that keeps the note's size and sets its mtime back is still seen: the
// index is keyed by ctime too, which no tool can set back.
func TestIndexSeesSameSizeEditWithMtimeSetBack(t *testing.T) {
	tests := []struct {
		name                 string
		note                 string // "u" or "r": which note is edited
		edit                 *strings.Replacer
		unresolved, target33 []string // List{Unresolved}, List{Target: "333"} after the edit
	}{
		{"target changed", "u", strings.NewReplacer(`target: "222"`, `target: "333"`, "chat 222", "chat 333"),
			[]string{"op-u unknown 333"}, []string{"op-u unknown 333"}},
		{"resolved by hand", "u", strings.NewReplacer("status: unknown", "status: committed", "next_action: verify-before-retry", "next_action: none"),
			nil, nil},
		{"unresolved by hand", "r", strings.NewReplacer("status: committed", "status: unknown", "next_action: none", "next_action: verify-before-retry", "resolution: delivered\n", ""),
			[]string{"op-u unknown 222", "op-r unknown 222"}, nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			v, u, r := cachedVault(t)
			path := map[string]string{"u": u, "r": r}[tt.note]
			old := string(readBytes(t, path))
			note := tt.edit.Replace(old)
			if note == old {
				t.Fatal("the edit changed nothing")
			}
			sameSizeEdit(t, path, note)
			if got := ids(list(t, v, vault.Filter{Unresolved: true})); !reflect.DeepEqual(got, tt.unresolved) {
				t.Errorf("List unresolved after the edit: got %q, want %q", got, tt.unresolved)
			}
			if got := ids(list(t, v, vault.Filter{Target: "333"})); !reflect.DeepEqual(got, tt.target33) {
				t.Errorf("List target 333 after the edit: got %q, want %q", got, tt.target33)
			}
		})
	}
}

// A note changed within the racy window of the List that read it is not cached: a
// second change in the same tick of the file system's clock could leave its stamp as
// it was.
func TestIndexDoesNotCacheRacyNote(t *testing.T) {
	vault.SetRacyWindow(t, time.Hour) // however slow the machine, the note changed within it
	v := open(t)
	write(t, v, newEnvelope("op-u", t0))
	list(t, v, vault.Filter{})
	if n := reads(func() { list(t, v, vault.Filter{}) }); n != 1 {
		t.Errorf("a List after a note changed just now read %d notes, want it read again (1)", n)
	}
}

// The index answers for notes that have not changed, so a List with it reads only the
// notes it must, and returns what reading them gives.
func TestIndexAnswersLikeTheNotes(t *testing.T) {
	v, _, _ := cachedVault(t)
	for _, f := range []vault.Filter{{}, {Unresolved: true}, {Target: "222"}, {OlderThan: time.Hour, Now: t0.AddDate(0, 1, 0)}} {
		var cached []vault.Note
		if n := reads(func() { cached = list(t, v, f) }); n != 0 {
			t.Errorf("List(%+v) read %d notes, want 0", f, n)
		}
		if err := os.Remove(filepath.Join(v.Dir(), vault.IndexName)); err != nil {
			t.Fatal(err)
		}
		if got := list(t, v, f); !reflect.DeepEqual(got, cached) {
			t.Errorf("List(%+v) with the index:\n%+v\nwithout:\n%+v", f, cached, got)
		}
		list(t, v, vault.Filter{}) // cache every envelope again
	}
}

// A missing, corrupt, truncated or foreign index, or something else under its name,
// is rebuilt: the List that meets it reads every note, answers right, and saves a
// good index that the next List uses.
func TestIndexRebuilt(t *testing.T) {
	outside := filepath.Join(t.TempDir(), "elsewhere")
	tests := []struct {
		name   string
		damage func(t *testing.T, path string, good []byte)
	}{
		{"missing", func(t *testing.T, path string, _ []byte) { os.Remove(path) }},
		{"empty", func(t *testing.T, path string, _ []byte) { os.WriteFile(path, nil, 0o600) }},
		{"truncated", func(t *testing.T, path string, good []byte) { os.WriteFile(path, good[:len(good)/2], 0o600) }},
		{"checksum cut off", func(t *testing.T, path string, good []byte) { os.WriteFile(path, good[:len(good)-4], 0o600) }},
		{"a field rewritten", func(t *testing.T, path string, good []byte) {
			os.WriteFile(path, bytes.ReplaceAll(good, []byte("Hello there"), []byte("HELLO THERE")), 0o600)
		}},
		{"corrupt", func(t *testing.T, path string, good []byte) {
			bad := bytes.Clone(good)
			bad[len(bad)/2] ^= 0x5a
			os.WriteFile(path, bad, 0o600)
		}},
		{"foreign", func(t *testing.T, path string, _ []byte) { os.WriteFile(path, []byte("{\"notes\": []}\n"), 0o600) }},
		{"another version", func(t *testing.T, path string, good []byte) {
			os.WriteFile(path, bytes.Replace(good, []byte("index 2\n"), []byte("index 9\n"), 1), 0o600)
		}},
		{"a link", func(t *testing.T, path string, good []byte) {
			os.WriteFile(outside, good, 0o600)
			os.Remove(path)
			os.Symlink(outside, path)
		}},
		{"a FIFO", func(t *testing.T, path string, _ []byte) {
			os.Remove(path)
			mkfifo(t, path)
		}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			v, _, _ := cachedVault(t)
			path := filepath.Join(v.Dir(), vault.IndexName)
			good := readBytes(t, path)
			tt.damage(t, path, good)
			var got []vault.Note
			var n int64
			within(t, "List", func() { n = reads(func() { got = list(t, v, vault.Filter{Unresolved: true}) }) })
			if want := []string{"op-u unknown 222"}; !reflect.DeepEqual(ids(got), want) {
				t.Errorf("List unresolved: got %q, want %q", ids(got), want)
			}
			if n != 2 {
				t.Errorf("List read %d notes, want both (2)", n)
			}
			fi, err := os.Lstat(path)
			if err != nil || !fi.Mode().IsRegular() || fi.Mode().Perm() != 0o600 {
				t.Fatalf("index after the rebuild: %v (%v), want a regular 0600 file", fi.Mode(), err)
			}
			if n := reads(func() { list(t, v, vault.Filter{Unresolved: true}) }); n != 0 {
				t.Errorf("List after the rebuild read %d notes, want 0", n)
			}
			if tt.name == "a link" {
				if got := readBytes(t, outside); !bytes.Equal(got, good) {
					t.Errorf("the link's target was written")
				}
			}
		})
	}
}

// A note deleted, or replaced under the same name, is seen at once.
func TestIndexSeesDeletedAndReplacedNotes(t *testing.T) {
	v, u, r := cachedVault(t)
	if err := os.Remove(r); err != nil {
		t.Fatal(err)
	}
	if got, want := ids(list(t, v, vault.Filter{})), []string{"op-u unknown 222"}; !reflect.DeepEqual(got, want) {
		t.Errorf("List after a delete: got %q, want %q", got, want)
	}
	// Replaced by another file of the same size and times: a new inode.
	fi, err := os.Stat(u)
	if err != nil {
		t.Fatal(err)
	}
	note := strings.Replace(string(readBytes(t, u)), `target: "222"`, `target: "333"`, 1)
	tmp := filepath.Join(filepath.Dir(u), ".swap")
	if err := os.WriteFile(tmp, []byte(note), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.Chtimes(tmp, fi.ModTime(), fi.ModTime()); err != nil {
		t.Fatal(err)
	}
	if err := os.Rename(tmp, u); err != nil {
		t.Fatal(err)
	}
	if got, want := ids(list(t, v, vault.Filter{Unresolved: true})), []string{"op-u unknown 333"}; !reflect.DeepEqual(got, want) {
		t.Errorf("List after a replacement: got %q, want %q", got, want)
	}
}

// A cached note replaced by a link (even to a copy of itself) or a FIFO is refused
// as before: reported broken, never opened, never removed by GC.
func TestIndexStillRefusesLinksAndFIFOs(t *testing.T) {
	for _, kind := range []string{"link", "fifo"} {
		t.Run(kind, func(t *testing.T) {
			v, _, r := cachedVault(t)
			copyOf := filepath.Join(t.TempDir(), "op-r.md")
			if err := os.WriteFile(copyOf, readBytes(t, r), 0o600); err != nil {
				t.Fatal(err)
			}
			if err := os.Remove(r); err != nil {
				t.Fatal(err)
			}
			mode := os.ModeSymlink
			if kind == "link" {
				if err := os.Symlink(copyOf, r); err != nil {
					t.Fatal(err)
				}
			} else {
				mode = os.ModeNamedPipe
				mkfifo(t, r)
			}
			for _, f := range []vault.Filter{{}, {Unresolved: true}} {
				within(t, "List", func() {
					_, broken, err := v.List(f)
					if err != nil || !brokenPaths(t, broken, vault.ErrNotRegular)[r] {
						t.Errorf("List(%+v): broken %v (%v), want %s reported", f, broken, err, r)
					}
				})
			}
			within(t, "GC", func() {
				if removed, err := v.GC(t0.AddDate(1, 0, 0)); err != nil || len(removed) != 0 {
					t.Errorf("GC: removed %q (%v), want nothing", removed, err)
				}
			})
			sameMode(t, r, mode)
		})
	}
}

// GC never removes an unresolved note that it cannot parse, nor one that the fast
// pre-scan (envelope.Peek) cannot read, whether the index has seen it or not: a
// person adding a list of tags in Obsidian makes both true at once.
func TestGCKeepsUnresolvedNotesThePreScanCannotRead(t *testing.T) {
	tests := []struct {
		name string
		edit *strings.Replacer
		want error // what List reports; nil: the note parses
	}{
		{"tags added, unparseable", strings.NewReplacer("status: unknown\n", "status: unknown\ntags:\n  - todo\n"), envelope.ErrYAML},
		{"status quoted with an escape, unparseable", strings.NewReplacer("status: unknown\n", "status: \"unkn\\x6Fwn\"\nstatus_note: x\n"), envelope.ErrYAML},
		{"status on its own line, parseable", strings.NewReplacer("status: unknown\n", "status:\n  unknown\n"), nil},
		{"bad expiry, unparseable", strings.NewReplacer("status: unknown\n", "status: [unknown\n"), envelope.ErrYAML},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			vault.SetRacyWindow(t, 0)
			v := open(t)
			e := newEnvelope("op-1", t0)
			path := write(t, v, e)
			note := []byte(tt.edit.Replace(string(readBytes(t, path))))
			if err := os.WriteFile(path, note, 0o600); err != nil {
				t.Fatal(err)
			}
			if _, ok := envelope.Peek(note, "status"); ok {
				t.Fatalf("Peek reads the status of\n%s", note)
			}
			waitTick(t, v, path)
			after := e.Expires.AddDate(1, 0, 0)
			for round := range 3 { // no index, then one saved by GC, then one saved by List too
				if removed, err := v.GC(after); err != nil || len(removed) != 0 {
					t.Fatalf("GC round %d: removed %q (%v), want nothing", round, removed, err)
				}
				notes, broken, err := v.List(vault.Filter{})
				switch {
				case err != nil:
					t.Fatal(err)
				case tt.want != nil && (len(broken) != 1 || !errors.Is(broken[0], tt.want)):
					t.Errorf("List round %d: broken %v, want the note wrapping %v", round, broken, tt.want)
				case tt.want == nil && (len(notes) != 1 || !notes[0].Envelope.Unresolved()):
					t.Errorf("List round %d: %+v %v, want the unresolved note", round, notes, broken)
				}
			}
			if got := readBytes(t, path); !bytes.Equal(got, note) {
				t.Errorf("the note changed:\n%s", got)
			}
		})
	}
}

// GC with a warm index removes what it would remove without one, and keeps the rest.
func TestGCWithIndex(t *testing.T) {
	vault.SetRacyWindow(t, 0)
	v := open(t)
	var last string
	for i := range 6 {
		e := newEnvelope(fmt.Sprintf("op-%d", i), t0.Add(time.Duration(i)*24*time.Hour))
		if i%3 != 0 {
			e.Resolve(i%2 == 0, "@alice", e.Created)
		}
		last = write(t, v, e)
	}
	waitTick(t, v, last)
	list(t, v, vault.Filter{})
	// op-1 and op-2 are resolved and expired at t0+9.5d; op-4 and op-5 are resolved but
	// not expired; op-0 and op-3 are unresolved.
	now := t0.Add(9*24*time.Hour + 12*time.Hour)
	var removed []string
	n := reads(func() {
		var err error
		if removed, err = v.GC(now); err != nil {
			t.Fatal(err)
		}
	})
	var got []string
	for _, p := range removed {
		got = append(got, filepath.Base(p))
	}
	if want := []string{"op-1.md", "op-2.md"}; !reflect.DeepEqual(got, want) {
		t.Errorf("GC removed %q, want %q", got, want)
	}
	if n != 2 {
		t.Errorf("GC read %d notes, want only the two it removed, each read again", n)
	}
	if got, want := ids(list(t, v, vault.Filter{})), []string{"op-0 unknown 222", "op-3 unknown 222", "op-4 committed 222", "op-5 not_committed 222"}; !reflect.DeepEqual(got, want) {
		t.Errorf("List after GC: got %q, want %q", got, want)
	}
}

// Writers in two Vaults on one folder (the bot and `countersign vault resolve`) write and
// resolve notes while others list them: every List sees whole notes, and the index
// left at the end answers exactly as the notes do.
func TestIndexWithConcurrentWriters(t *testing.T) {
	vault.SetRacyWindow(t, 50*time.Millisecond)
	first := open(t)
	second, err := vault.Open(first.Dir())
	if err != nil {
		t.Fatal(err)
	}
	vs := []*vault.Vault{first, second}
	const writers, rounds = 4, 15
	var wg sync.WaitGroup
	done := make(chan struct{})
	errs := make(chan error, 100)
	for w := range writers {
		wg.Go(func() {
			v := vs[w%2]
			for i := range rounds {
				id := fmt.Sprintf("op-%d-%d", w, i)
				if _, err := v.Write(newEnvelope(id, t0.Add(time.Duration(i)*time.Minute))); err != nil {
					errs <- err
					return
				}
				if i%2 == 0 {
					if _, err := vs[(w+1)%2].Resolve(id, i%4 == 0, "@alice", t0); err != nil {
						errs <- err
						return
					}
				}
			}
		})
	}
	var readers sync.WaitGroup
	for r := range 2 {
		readers.Go(func() {
			for {
				select {
				case <-done:
					return
				default:
				}
				_, broken, err := vs[r].List(vault.Filter{Unresolved: r == 0})
				if err != nil || len(broken) != 0 {
					errs <- fmt.Errorf("List during writes: %v, broken %v", err, broken)
					return
				}
				if _, err := vs[r].GC(t0); err != nil {
					errs <- err
					return
				}
			}
		})
	}
	wg.Wait()
	close(done)
	readers.Wait()
	close(errs)
	for err := range errs {
		t.Error(err)
	}
	want := map[string]envelope.Status{}
	for w := range writers {
		for i := range rounds {
			status := envelope.StatusUnknown
			if i%2 == 0 {
				status = map[bool]envelope.Status{true: envelope.StatusCommitted, false: envelope.StatusNotCommitted}[i%4 == 0]
			}
			want[fmt.Sprintf("op-%d-%d", w, i)] = status
		}
	}
	withIndex := list(t, first, vault.Filter{})
	got := map[string]envelope.Status{}
	for _, n := range withIndex {
		got[n.Envelope.OperationID] = n.Envelope.Status
	}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("List with the index: got %v, want %v", got, want)
	}
	if err := os.Remove(filepath.Join(first.Dir(), vault.IndexName)); err != nil {
		t.Fatal(err)
	}
	if fromNotes := list(t, first, vault.Filter{}); !reflect.DeepEqual(fromNotes, withIndex) {
		t.Errorf("List without the index differs from List with it")
	}
}

// GC keeps a resolved note that expires at this very instant and removes one a
// nanosecond older, also when the fast pre-scan cannot read them (an indented value
// makes every Peek fail) and the parse decides.
func TestGCExpiryBoundaryWithoutPreScan(t *testing.T) {
	v := open(t)
	now := t0.Add(30 * 24 * time.Hour)
	var paths []string
	for _, x := range []struct {
		id      string
		expires time.Time
	}{{"op-at-now", now}, {"op-past", now.Add(-time.Nanosecond)}} {
		e := newEnvelope(x.id, t0)
		e.Resolve(true, "@alice", t0)
		e.Expires = x.expires
		path := write(t, v, e)
		note := []byte(strings.Replace(string(readBytes(t, path)), "next_action: none\n", "next_action:\n  none\n", 1))
		if err := os.WriteFile(path, note, 0o600); err != nil {
			t.Fatal(err)
		}
		if _, ok := envelope.Peek(note, "expires"); ok {
			t.Fatalf("Peek reads the expiry of\n%s", note)
		}
		paths = append(paths, path)
	}
	removed, err := v.GC(now)
	if err != nil {
		t.Fatal(err)
	}
	if want := paths[1:]; !reflect.DeepEqual(removed, want) {
		t.Errorf("GC removed %q, want %q", removed, want)
	}
	if _, err := os.Lstat(paths[0]); err != nil {
		t.Errorf("the note expiring at now is gone: %v", err)
	}
}
