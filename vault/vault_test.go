package vault_test

import (
	"bytes"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/countersign/countersign/envelope"
	"github.com/countersign/countersign/vault"
)

var t0 = time.Date(2026, 11, 30, 9, 15, 2, 0, time.UTC)

func newEnvelope(id string, created time.Time) envelope.Envelope {
	return envelope.Envelope{
		OperationID:   id,
		Action:        envelope.ActionSendMessage,
		Tool:          "commit_send_message",
		Status:        envelope.StatusUnknown,
		LastConfirmed: "prepared",
		NextAction:    envelope.NextVerify,
		Target:        "222",
		PayloadSHA256: "4f1c0b5e2a7d9c3f8e6b1a0d4c7f2e9b5a3d8c1f6e0b7a4d2c9f5e8b3a6d1c0f",
		Created:       created,
		Expires:       created.Add(7 * 24 * time.Hour),
		Attempts:      1,
		Response:      "timeout after the request was sent",
		Excerpt:       "Hello there",
	}
}

func open(t *testing.T) *vault.Vault {
	t.Helper()
	v, err := vault.Open(filepath.Join(t.TempDir(), "data", "vault"))
	if err != nil {
		t.Fatalf("Open: %v", err)
	}
	return v
}

func write(t *testing.T, v *vault.Vault, e envelope.Envelope) string {
	t.Helper()
	path, err := v.Write(e)
	if err != nil {
		t.Fatalf("Write %s: %v", e.OperationID, err)
	}
	return path
}

func readBytes(t *testing.T, path string) []byte {
	t.Helper()
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	return data
}

func TestWriteGet(t *testing.T) {
	v := open(t)
	want := newEnvelope("op-7k2m9q", t0)
	path := write(t, v, want)
	if got, wantRel := v.Path("op-7k2m9q", t0), filepath.Join("envelopes", "2026", "11", "op-7k2m9q.md"); got != wantRel {
		t.Errorf("Path: got %q, want %q", got, wantRel)
	}
	if wantPath := filepath.Join(v.Dir(), v.Path("op-7k2m9q", t0)); path != wantPath || path != v.AbsPath("op-7k2m9q", t0) {
		t.Errorf("Write path: got %q, want %q", path, wantPath)
	}
	got, gotPath, err := v.Get("op-7k2m9q")
	if err != nil {
		t.Fatalf("Get: %v", err)
	}
	if gotPath != path {
		t.Errorf("Get path: got %q, want %q", gotPath, path)
	}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("Get:\ngot  %#v\nwant %#v", got, want)
	}
	if fi, err := os.Stat(path); err != nil || fi.Mode().Perm() != 0o600 {
		t.Errorf("note mode: got %v (%v), want 0600", fi.Mode(), err)
	}
}

func TestPathUsesUTCMonth(t *testing.T) {
	v := open(t)
	// 23:30 on 30 November in New York is already December in UTC.
	created := time.Date(2026, 11, 30, 23, 30, 0, 0, time.FixedZone("EST", -5*3600))
	got, want := v.Path("op-1", created), filepath.Join("envelopes", "2026", "12", "op-1.md")
	if got != want {
		t.Errorf("Path: got %q, want %q", got, want)
	}
}

func TestGetNotFound(t *testing.T) {
	v := open(t)
	write(t, v, newEnvelope("op-1", t0))
	tests := []struct {
		name, id string
		also     error
	}{
		{"absent", "op-2", vault.ErrNotFound},
		{"malformed", "../op-1", envelope.ErrInvalid},
		{"glob", "op-*", envelope.ErrInvalid},
		{"secret", "ghp_abcdefghijklmnopqrstuvwxyz0123456789", vault.ErrSecretID},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, _, err := v.Get(tt.id)
			if !errors.Is(err, vault.ErrNotFound) || !errors.Is(err, tt.also) {
				t.Errorf("Get(%q): got %v, want %v and %v", tt.id, err, vault.ErrNotFound, tt.also)
			}
		})
	}
}

func TestWriteReplacesInPlace(t *testing.T) {
	v := open(t)
	first := write(t, v, newEnvelope("op-1", t0))
	e := newEnvelope("op-1", t0.AddDate(0, 1, 0)) // created edited into the next month
	e.Attempts = 2
	second := write(t, v, e)
	if second != first {
		t.Errorf("second Write path: got %q, want the existing %q", second, first)
	}
	got, _, err := v.Get("op-1")
	if err != nil || got.Attempts != 2 {
		t.Errorf("Get after rewrite: got attempts %d (%v), want 2", got.Attempts, err)
	}
}

func TestWriteRejectsInvalid(t *testing.T) {
	v := open(t)
	tests := []struct {
		name string
		edit func(*envelope.Envelope)
		want error
	}{
		{"no id", func(e *envelope.Envelope) { e.OperationID = "" }, envelope.ErrInvalid},
		{"path id", func(e *envelope.Envelope) { e.OperationID = "../../etc/passwd" }, envelope.ErrInvalid},
		{"secret id", func(e *envelope.Envelope) { e.OperationID = "ghp_abcdefghijklmnopqrstuvwxyz0123456789" }, vault.ErrSecretID},
		{"bad status", func(e *envelope.Envelope) { e.Status = "maybe" }, envelope.ErrInvalid},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			e := newEnvelope("op-1", t0)
			tt.edit(&e)
			if _, err := v.Write(e); !errors.Is(err, tt.want) {
				t.Errorf("Write: got %v, want %v", err, tt.want)
			}
		})
	}
	if files := filesUnder(t, v.Dir()); len(files) != 0 {
		t.Errorf("files after refused writes: got %q, want none", files)
	}
}

// filesUnder returns every regular file under dir but the writers' lock file and the
// listing index.
func filesUnder(t *testing.T, dir string) []string {
	t.Helper()
	var files []string
	err := filepath.WalkDir(dir, func(path string, d fs.DirEntry, err error) error {
		if err == nil && d.Type().IsRegular() && d.Name() != ".countersign.lock" && d.Name() != ".countersign.index" {
			files = append(files, path)
		}
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
	return files
}

func TestResolve(t *testing.T) {
	at := t0.Add(47 * time.Minute)
	v := open(t)
	path := write(t, v, newEnvelope("op-1", t0))
	got, err := v.Resolve("op-1", true, "@alice", at)
	if err != nil {
		t.Fatalf("Resolve: %v", err)
	}
	want := newEnvelope("op-1", t0)
	want.Resolve(true, "@alice", at)
	if !reflect.DeepEqual(got, want) {
		t.Errorf("Resolve:\ngot  %#v\nwant %#v", got, want)
	}
	if stored, _, err := v.Get("op-1"); err != nil || !reflect.DeepEqual(stored, want) {
		t.Errorf("Get after Resolve:\ngot  %#v (%v)\nwant %#v", stored, err, want)
	}
	before := readBytes(t, path)

	t.Run("same answer is a no-op", func(t *testing.T) {
		got, err := v.Resolve("op-1", true, "@bob", at.Add(time.Hour))
		if err != nil || !reflect.DeepEqual(got, want) {
			t.Errorf("Resolve again: got %#v, %v; want %#v, nil", got, err, want)
		}
		if after := readBytes(t, path); !bytes.Equal(after, before) {
			t.Errorf("note changed:\n%s", after)
		}
	})
	t.Run("opposite answer", func(t *testing.T) {
		got, err := v.Resolve("op-1", false, "@bob", at.Add(time.Hour))
		if !errors.Is(err, vault.ErrAlreadyResolved) {
			t.Errorf("Resolve not delivered: got %v, want %v", err, vault.ErrAlreadyResolved)
		}
		if got.Status != envelope.StatusCommitted {
			t.Errorf("returned status: got %q, want the note's %q", got.Status, envelope.StatusCommitted)
		}
		if after := readBytes(t, path); !bytes.Equal(after, before) {
			t.Errorf("note changed:\n%s", after)
		}
	})
	t.Run("absent", func(t *testing.T) {
		if _, err := v.Resolve("op-2", true, "@bob", at); !errors.Is(err, vault.ErrNotFound) {
			t.Errorf("Resolve: got %v, want %v", err, vault.ErrNotFound)
		}
	})
}

func TestResolveNotDelivered(t *testing.T) {
	v := open(t)
	write(t, v, newEnvelope("op-1", t0))
	got, err := v.Resolve("op-1", false, "user 12345 (alice@example.com)", t0)
	if err != nil {
		t.Fatal(err)
	}
	want := []string{string(envelope.StatusNotCommitted), envelope.NextRetryAllowed, "user 12345 ([email])"}
	if g := []string{string(got.Status), got.NextAction, got.ResolvedBy}; !reflect.DeepEqual(g, want) {
		t.Errorf("status, next, by: got %q, want %q", g, want)
	}
}

func TestList(t *testing.T) {
	v := open(t)
	now := t0.Add(30 * 24 * time.Hour)
	add := func(id string, age time.Duration, target string, resolved bool) {
		e := newEnvelope(id, now.Add(-age))
		e.Target = target
		if resolved {
			e.Resolve(true, "@alice", now)
		}
		write(t, v, e)
	}
	add("op-old-a", 40*24*time.Hour, "222", false)
	add("op-old-b", 40*24*time.Hour, "222", true)
	add("op-mid", 10*24*time.Hour, "-1001234567890", false)
	add("op-new", time.Hour, "@news", false)
	add("op-new-done", time.Minute, "222", true)

	tests := []struct {
		name   string
		filter vault.Filter
		want   []string
	}{
		{"all, by created then id", vault.Filter{}, []string{"op-old-a", "op-old-b", "op-mid", "op-new", "op-new-done"}},
		{"unresolved", vault.Filter{Unresolved: true}, []string{"op-old-a", "op-mid", "op-new"}},
		{"target", vault.Filter{Target: "222"}, []string{"op-old-a", "op-old-b", "op-new-done"}},
		{"older than a day", vault.Filter{OlderThan: 24 * time.Hour, Now: now}, []string{"op-old-a", "op-old-b", "op-mid"}},
		{"all three", vault.Filter{Unresolved: true, Target: "222", OlderThan: 24 * time.Hour, Now: now}, []string{"op-old-a"}},
		{"none", vault.Filter{Target: "333"}, nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			notes, broken, err := v.List(tt.filter)
			if err != nil || len(broken) != 0 {
				t.Fatalf("List: %v, broken %v", err, broken)
			}
			var got []string
			for _, n := range notes {
				got = append(got, n.Envelope.OperationID)
				if n.Path != v.AbsPath(n.Envelope.OperationID, n.Envelope.Created) {
					t.Errorf("path of %s: got %q", n.Envelope.OperationID, n.Path)
				}
			}
			if !reflect.DeepEqual(got, tt.want) {
				t.Errorf("List: got %q, want %q", got, tt.want)
			}
		})
	}
}

func TestListEmptyVault(t *testing.T) {
	notes, broken, err := open(t).List(vault.Filter{})
	if err != nil || notes != nil || broken != nil {
		t.Errorf("List: got %v, %v, %v; want nothing", notes, broken, err)
	}
}

func TestGC(t *testing.T) {
	v := open(t)
	now := t0.Add(30 * 24 * time.Hour)
	add := func(id string, expires time.Time, resolved bool) string {
		e := newEnvelope(id, t0)
		e.Expires = expires
		if resolved {
			e.Resolve(false, "@alice", t0)
		}
		return write(t, v, e)
	}
	expired := add("op-expired", now.Add(-time.Second), true)
	keep := []string{
		add("op-unresolved-expired", now.Add(-time.Second), false),
		add("op-resolved-fresh", now.Add(time.Second), true),
		add("op-resolved-at-now", now, true),
		add("op-no-expiry", time.Time{}, true),
	}
	removed, err := v.GC(now)
	if err != nil {
		t.Fatalf("GC: %v", err)
	}
	if want := []string{expired}; !reflect.DeepEqual(removed, want) {
		t.Errorf("GC removed: got %q, want %q", removed, want)
	}
	if got := filesUnder(t, v.Dir()); !sameSet(got, keep) {
		t.Errorf("files after GC: got %q, want %q", got, keep)
	}
}

func TestGCRemovesEmptiedFolders(t *testing.T) {
	v := open(t)
	e := newEnvelope("op-1", t0)
	e.Resolve(true, "@alice", t0)
	write(t, v, e)
	if _, err := v.GC(e.Expires.Add(time.Second)); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(filepath.Join(v.Dir(), "envelopes", "2026")); !errors.Is(err, fs.ErrNotExist) {
		t.Errorf("year folder after GC: got %v, want it removed", err)
	}
	if _, err := v.Write(newEnvelope("op-2", t0)); err != nil {
		t.Errorf("Write after GC emptied the folders: %v", err)
	}
}

func sameSet(a, b []string) bool {
	m := map[string]int{}
	for _, s := range a {
		m[s]++
	}
	for _, s := range b {
		m[s]--
	}
	for _, n := range m {
		if n != 0 {
			return false
		}
	}
	return len(a) == len(b)
}

func TestBrokenNotes(t *testing.T) {
	tests := []struct {
		name string
		edit func(note string) string
		want error
	}{
		{"bad yaml", func(n string) string { return strings.Replace(n, "status: committed", "status: [committed", 1) }, envelope.ErrYAML},
		{"missing operation_id", func(n string) string { return strings.Replace(n, "operation_id: op-1\n", "", 1) }, envelope.ErrInvalid},
		{"unterminated front matter", func(n string) string { return strings.Replace(n, "---\n\n", "\n", 1) }, envelope.ErrUnterminated},
		{"unknown status", func(n string) string { return strings.Replace(n, "status: committed", "status: done", 1) }, envelope.ErrInvalid},
		{"renamed id", func(n string) string { return strings.Replace(n, "operation_id: op-1", "operation_id: op-9", 1) }, vault.ErrNameMismatch},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			v := open(t)
			e := newEnvelope("op-1", t0)
			e.Resolve(true, "@alice", t0)
			path := write(t, v, e)
			broken := []byte(tt.edit(string(readBytes(t, path))))
			if err := os.WriteFile(path, broken, 0o600); err != nil {
				t.Fatal(err)
			}
			checkBroken(t, v, path, broken, tt.want)
		})
	}
}

// checkBroken asserts that the broken note at path is reported by Get and List and
// left untouched by Write, Create, Resolve and GC.
func checkBroken(t *testing.T, v *vault.Vault, path string, note []byte, want error) {
	t.Helper()
	var be *vault.BrokenError
	if _, _, err := v.Get("op-1"); !errors.As(err, &be) || be.Path != path || !errors.Is(err, want) {
		t.Errorf("Get: got %v, want a *BrokenError for %s wrapping %v", err, path, want)
	}
	_, broken, err := v.List(vault.Filter{})
	if err != nil || len(broken) != 1 || broken[0].Path != path || !errors.Is(broken[0], want) {
		t.Errorf("List broken: got %v (%v), want one for %s wrapping %v", broken, err, path, want)
	}
	if _, err := v.Write(newEnvelope("op-1", t0)); !errors.As(err, &be) || be.Path != path {
		t.Errorf("Write: got %v, want a *BrokenError for %s", err, path)
	}
	if _, err := v.Create(newEnvelope("op-1", t0)); !errors.As(err, &be) || be.Path != path {
		t.Errorf("Create: got %v, want a *BrokenError for %s", err, path)
	}
	if _, err := v.Resolve("op-1", false, "@bob", t0); !errors.As(err, &be) || be.Path != path {
		t.Errorf("Resolve: got %v, want a *BrokenError for %s", err, path)
	}
	if removed, err := v.GC(t0.AddDate(1, 0, 0)); err != nil || len(removed) != 0 {
		t.Errorf("GC: removed %q (%v), want nothing", removed, err)
	}
	if got := readBytes(t, path); !bytes.Equal(got, note) {
		t.Errorf("broken note changed:\ngot:\n%s\nwant:\n%s", got, note)
	}
	if files := filesUnder(t, v.Dir()); len(files) != 1 {
		t.Errorf("files: got %q, want only %s", files, path)
	}
}

func TestHandResolvedNote(t *testing.T) {
	v := open(t)
	path := write(t, v, newEnvelope("op-1", t0))
	note := strings.NewReplacer("status: unknown", "status: committed", "next_action: verify-before-retry", "next_action: none").
		Replace(string(readBytes(t, path)))
	if err := os.WriteFile(path, []byte(note), 0o600); err != nil {
		t.Fatal(err)
	}
	if notes, _, err := v.List(vault.Filter{Unresolved: true}); err != nil || len(notes) != 0 {
		t.Errorf("List unresolved: got %d notes (%v), want none", len(notes), err)
	}
	if _, err := v.Resolve("op-1", true, "@bob", t0); err != nil {
		t.Errorf("Resolve delivered: got %v, want a no-op", err)
	}
	if _, err := v.Resolve("op-1", false, "@bob", t0); !errors.Is(err, vault.ErrAlreadyResolved) {
		t.Errorf("Resolve not delivered: got %v, want %v", err, vault.ErrAlreadyResolved)
	}
	if got := string(readBytes(t, path)); got != note {
		t.Errorf("note changed:\n%s", got)
	}
}

// A filtered List passes over notes that plainly state another status without parsing
// them, so it reports only the broken notes it had to parse.
func TestFilteredListAndBrokenNotes(t *testing.T) {
	v := open(t)
	e := newEnvelope("op-resolved", t0)
	e.Resolve(true, "@alice", t0)
	resolved := write(t, v, e)
	unresolved := write(t, v, newEnvelope("op-unresolved", t0))
	for _, path := range []string{resolved, unresolved} {
		note := strings.Replace(string(readBytes(t, path)), "attempts: 1\n", "attempts: 1\njunk: 1\n", 1)
		if err := os.WriteFile(path, []byte(note), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	tests := []struct {
		name   string
		filter vault.Filter
		want   []string
	}{
		{"unfiltered", vault.Filter{}, []string{resolved, unresolved}},
		{"unresolved", vault.Filter{Unresolved: true}, []string{unresolved}},
		{"other target", vault.Filter{Target: "333"}, nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			notes, broken, err := v.List(tt.filter)
			var got []string
			for _, b := range broken {
				got = append(got, b.Path)
			}
			if err != nil || len(notes) != 0 || !reflect.DeepEqual(got, tt.want) {
				t.Errorf("List: got %d notes, broken %q (%v); want broken %q", len(notes), got, err, tt.want)
			}
		})
	}
}

// Concurrent answers for one operation: the first resolution wins, the same answer
// again is a no-op, the opposite answer is refused, and the note holds the winner.
// TestResolveRace resolves one note both ways at once, from one Vault and from two
// opened on the same folder (the running bot and `countersign vault resolve`): exactly one
// answer is written and every other caller learns it.
func TestResolveRace(t *testing.T) {
	for _, instances := range []int{1, 2} {
		t.Run(fmt.Sprintf("%d instances", instances), func(t *testing.T) {
			first := open(t)
			vs := []*vault.Vault{first}
			for len(vs) < instances {
				v, err := vault.Open(first.Dir())
				if err != nil {
					t.Fatal(err)
				}
				vs = append(vs, v)
			}
			for round := range 20 {
				id := fmt.Sprintf("op-%d", round)
				write(t, first, newEnvelope(id, t0))
				resolveBothWays(t, vs, id)
			}
		})
	}
}

func resolveBothWays(t *testing.T, vs []*vault.Vault, id string) {
	t.Helper()
	const n = 16
	type result struct {
		delivered bool
		err       error
	}
	results := make(chan result, n)
	for i := range n {
		go func() {
			_, err := vs[i%len(vs)].Resolve(id, i%2 == 0, "@alice", t0)
			results <- result{i%2 == 0, err}
		}()
	}
	var got []result
	for range n {
		select {
		case r := <-results:
			got = append(got, r)
		case <-time.After(10 * time.Second):
			t.Fatal("Resolve did not return")
		}
	}
	stored, _, err := vs[0].Get(id)
	if err != nil || stored.Unresolved() {
		t.Fatalf("Get: got %q (%v), want resolved", stored.Status, err)
	}
	for _, r := range got {
		won := (stored.Status == envelope.StatusCommitted) == r.delivered
		if won && r.err != nil || !won && !errors.Is(r.err, vault.ErrAlreadyResolved) {
			t.Errorf("%s: Resolve(delivered=%v) with %q stored: got %v", id, r.delivered, stored.Status, r.err)
		}
	}
}

// Create writes an attempt's note once: a note of the same attempt or a later
// one is left as it is (a person may have resolved it since it was written) and
// named, with ErrExists; only a note of an earlier attempt is replaced, where
// it is.
func TestCreate(t *testing.T) {
	for _, tt := range []struct {
		name     string
		there    int // the attempt whose note is there, 0 for none
		attempt  int // the attempt Create writes
		replaces bool
	}{
		{"no note", 0, 1, true},
		{"the same attempt's note", 1, 1, false},
		{"a later attempt's note", 2, 1, false},
		{"an earlier attempt's note", 1, 2, true},
	} {
		t.Run(tt.name, func(t *testing.T) {
			v := open(t)
			var there string
			var before []byte
			if tt.there > 0 {
				e := newEnvelope("op-1", t0)
				e.Attempts = tt.there
				e.Resolve(false, "@alice", t0.Add(time.Hour))
				there = write(t, v, e)
				before = readBytes(t, there)
			}
			e := newEnvelope("op-1", t0.AddDate(0, 1, 0)) // a note written anew would be in the next month's folder
			e.Attempts = tt.attempt
			path, err := v.Create(e)
			switch {
			case tt.replaces && err != nil:
				t.Fatalf("Create: %v", err)
			case !tt.replaces && !errors.Is(err, vault.ErrExists):
				t.Fatalf("Create: got %v, want ErrExists", err)
			}
			if there == "" {
				there = v.AbsPath("op-1", e.Created)
			}
			if path != there {
				t.Errorf("Create: path %q, want %q", path, there)
			}
			got, _, err := v.Get("op-1")
			if err != nil {
				t.Fatalf("Get: %v", err)
			}
			if tt.replaces && (got.Attempts != tt.attempt || !got.Unresolved()) {
				t.Errorf("the note is attempt %d's, %s; want attempt %d's, unknown", got.Attempts, got.Status, tt.attempt)
			}
			if !tt.replaces && !bytes.Equal(readBytes(t, there), before) {
				t.Errorf("the note there was written over:\n%s\nwant as it was:\n%s", readBytes(t, there), before)
			}
			if files := filesUnder(t, v.Dir()); len(files) != 1 {
				t.Errorf("files: got %q, want one note", files)
			}
		})
	}
}

// Two processes that both find an operation's note missing (the bot's
// reconcile, and another replica or `countersign vault resolve`) write it once:
// many writers over two Vaults opened on the same folder create the note of
// one attempt at once, each with a creation time of its own month, so that a
// note written twice would be two files. Exactly one Create writes; every
// other one is told ErrExists with the winner's path, and the note is the
// winner's.
func TestCreateRace(t *testing.T) {
	first := open(t)
	second, err := vault.Open(first.Dir())
	if err != nil {
		t.Fatal(err)
	}
	vs := []*vault.Vault{first, second}
	for round := range 20 {
		id := fmt.Sprintf("op-%d", round)
		const n = 8
		type result struct {
			writer int
			path   string
			err    error
		}
		results := make(chan result, n)
		start := make(chan struct{})
		for i := range n {
			go func() {
				e := newEnvelope(id, t0.AddDate(0, i, 0))
				e.Response = fmt.Sprintf("written by writer %d", i)
				<-start
				path, err := vs[i%len(vs)].Create(e)
				results <- result{i, path, err}
			}()
		}
		close(start)
		var won []result
		var lost []result
		for range n {
			select {
			case r := <-results:
				if r.err == nil {
					won = append(won, r)
				} else {
					lost = append(lost, r)
				}
			case <-time.After(10 * time.Second):
				t.Fatal("Create did not return")
			}
		}
		if len(won) != 1 {
			t.Fatalf("%s: %d Creates wrote the note, want exactly one: %v", id, len(won), won)
		}
		for _, r := range lost {
			if !errors.Is(r.err, vault.ErrExists) || r.path != won[0].path {
				t.Errorf("%s: writer %d lost with (%q, %v), want ErrExists and the winner's note %q", id, r.writer, r.path, r.err, won[0].path)
			}
		}
		stored, path, err := first.Get(id)
		if err != nil {
			t.Fatalf("%s: Get: %v (a note written twice is in two month folders)", id, err)
		}
		if want := fmt.Sprintf("written by writer %d", won[0].writer); path != won[0].path || stored.Response != want {
			t.Errorf("%s: the note at %s says %q, want the winner's at %s, %q", id, path, stored.Response, won[0].path, want)
		}
	}
	if files := filesUnder(t, first.Dir()); len(files) != 20 {
		t.Errorf("%d notes for 20 operations: %q", len(files), files)
	}
}
