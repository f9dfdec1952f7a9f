//go:build linux || darwin

package vault

import (
	"os"
	"path/filepath"
	"reflect"
	"testing"
	"time"

	"github.com/countersign/countersign/envelope"
)

// fullEnvelope sets every field of an envelope, so that a field the index forgets to
// keep shows.
func fullEnvelope(t *testing.T) envelope.Envelope {
	t.Helper()
	at := time.Date(2026, 12, 1, 10, 0, 0, 123456789, time.UTC)
	e := envelope.Envelope{
		OperationID: "op-1", Action: "send_message", Tool: "commit_send_message",
		Status: envelope.StatusCommitted, LastConfirmed: "approved", NextAction: "none",
		Target: "-1001234567890", PayloadSHA256: "4f1c", Created: at.Add(-time.Hour),
		Expires: at.AddDate(0, 0, 7), Attempts: 3, Resolution: "delivered", ResolvedBy: "@alice",
		ResolvedAt: &at, SecretWithheld: true, Response: "timeout", Excerpt: "Hello",
		Items: []string{`1. photo "a.png", sha256 4f1c`, `2. photo "b.png", sha256 9e2d`},
	}
	rv := reflect.ValueOf(e)
	for i := range rv.NumField() {
		if rv.Field(i).IsZero() {
			t.Fatalf("fullEnvelope leaves %s unset", rv.Type().Field(i).Name)
		}
	}
	return e
}

func TestIndexRoundTrip(t *testing.T) {
	e := fullEnvelope(t)
	ix := index{
		"2026/11/op-1.md": {stamp: stamp{dev: 1, ino: 2, size: 3, mtime: -4, ctime: 5}, cacheable: true,
			peek: [numPeeks]peeked{{"committed", true}, {"", false}, {"x", true}}, env: &e},
		"2026/11/op-2.md": {stamp: stamp{ino: 7}, cacheable: true},
	}
	data := ix.encode()
	got, err := decodeIndex(data)
	if err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(got, ix) {
		t.Errorf("decode(encode(ix)):\n%+v\nwant\n%+v", got, ix)
	}
	for n := range len(data) {
		if _, err := decodeIndex(data[:n]); err == nil {
			t.Errorf("decodeIndex accepts the first %d of %d bytes", n, len(data))
		}
	}
	if _, err := decodeIndex(append(data[:len(data):len(data)], 0)); err == nil {
		t.Error("decodeIndex accepts a byte after the checksum")
	}
}

// An index whose entry names another operation than its note is foreign.
func TestIndexRejectsEnvelopeOfAnotherNote(t *testing.T) {
	e := fullEnvelope(t)
	data := index{"2026/11/op-2.md": {cacheable: true, env: &e}}.encode()
	if _, err := decodeIndex(data); err == nil {
		t.Error("decodeIndex accepts op-1's envelope for op-2's note")
	}
}

// GC never removes a note on the index's word alone: an index that says, with the
// note's very stamp, that an unresolved note is resolved and expired (written by
// hand, or by a tool that knows the format) leaves the note where it is.
func TestGCDoesNotTrustTheIndex(t *testing.T) {
	v, err := Open(filepath.Join(t.TempDir(), "vault"))
	if err != nil {
		t.Fatal(err)
	}
	e := envelope.Envelope{OperationID: "op-1", Status: envelope.StatusUnknown, Target: "222",
		Created: time.Date(2026, 11, 1, 0, 0, 0, 0, time.UTC)}
	e.Expires = e.Created.AddDate(0, 0, 7)
	path, err := v.Write(e)
	if err != nil {
		t.Fatal(err)
	}
	fi, err := os.Lstat(path)
	if err != nil {
		t.Fatal(err)
	}
	st, _ := stampOf(fi)
	lie := e
	lie.Resolve(true, "@mallory", e.Created)
	expires := e.Expires.Format(time.RFC3339)
	ix := index{"2026/11/op-1.md": {stamp: st, cacheable: true, env: &lie,
		peek: [numPeeks]peeked{{"committed", true}, {"222", true}, {expires, true}}}}
	if err := v.writeIndex(ix.encode()); err != nil {
		t.Fatal(err)
	}
	if got := v.loadIndex(); !reflect.DeepEqual(got, ix) {
		t.Fatalf("the forged index does not load: %+v", got)
	}
	removed, err := v.GC(e.Expires.AddDate(1, 0, 0))
	if err != nil || len(removed) != 0 {
		t.Errorf("GC: removed %q (%v), want nothing", removed, err)
	}
	if _, err := os.Lstat(path); err != nil {
		t.Errorf("the unresolved note is gone: %v", err)
	}
}
