package envelope_test

import (
	"bytes"
	"os"
	"path/filepath"
	"reflect"
	"testing"
	"time"

	"github.com/countersign/countersign/envelope"
)

// FuzzParse checks that Parse never panics, never accepts a note without an
// operation id or with a status outside the three, and that whatever it accepts
// renders to a note that parses back to the same envelope and renders identically.
// It also checks that Peek agrees with Parse whenever both accept a note.
func FuzzParse(f *testing.F) {
	goldens, err := filepath.Glob(filepath.Join("testdata", "*.golden"))
	if err != nil || len(goldens) == 0 {
		f.Fatalf("no golden seeds: %v", err)
	}
	for _, path := range goldens {
		data, err := os.ReadFile(path)
		if err != nil {
			f.Fatal(err)
		}
		f.Add(data)
		f.Add(bytes.Replace(data, []byte("status: "), []byte("status: x"), 1))
		f.Add(bytes.Replace(data, []byte("operation_id: "), []byte("#"), 1))
		f.Add(bytes.Replace(data, []byte("---\n\n"), nil, 1))
	}
	f.Add([]byte("---\nresponse: \"a\\n---\\nb\"\n---\n"))
	f.Add([]byte("---\r\noperation_id: op-1 # id\r\nstatus: 'committed'\r\ntarget: '@x''y'\r\n---\r\n"))
	f.Add([]byte("---\noperation_id: op-1\nstatus: unknown\ntool: \"x\nstatus: committed\n\"\n---\n"))
	f.Add([]byte("---\noperation_id: op-1\nstatus: unknown\ntarget: -100123 #c\nexpires: 2026-12-07T09:15:02+01:00\n---\n"))
	f.Fuzz(func(t *testing.T, note []byte) {
		e, err := envelope.Parse(note)
		if err != nil {
			return
		}
		checkPeek(t, note, e)
		if e.OperationID == "" || !validStatus(e.Status) {
			t.Fatalf("Parse accepted operation_id %q, status %q", e.OperationID, e.Status)
		}
		out, err := e.Render()
		if err != nil {
			t.Fatalf("Render of an accepted note: %v", err)
		}
		again, err := envelope.Parse(out)
		if err != nil {
			t.Fatalf("Parse(Render(Parse(note))): %v\n%s", err, out)
		}
		if !reflect.DeepEqual(again, e) {
			t.Fatalf("Parse(Render(e)):\ngot  %#v\nwant %#v\nnote:\n%s", again, e, out)
		}
		out2, err := again.Render()
		if err != nil || !bytes.Equal(out2, out) {
			t.Fatalf("Render(Parse(Render(e))) differs (%v):\n%s\nwant:\n%s", err, out2, out)
		}
	})
}

func validStatus(s envelope.Status) bool {
	switch s {
	case envelope.StatusUnknown, envelope.StatusCommitted, envelope.StatusNotCommitted:
		return true
	}
	return false
}

// checkPeek asserts that Peek, when it answers, gives the text Parse decoded.
func checkPeek(t *testing.T, note []byte, e envelope.Envelope) {
	t.Helper()
	fields := map[string]string{
		"operation_id": e.OperationID, "action": e.Action, "tool": e.Tool,
		"status": string(e.Status), "last_confirmed": e.LastConfirmed,
		"next_action": e.NextAction, "target": e.Target, "payload_sha256": e.PayloadSHA256,
		"resolution": e.Resolution, "resolved_by": e.ResolvedBy,
	}
	for key, want := range fields {
		if got, ok := envelope.Peek(note, key); ok && got != want {
			t.Fatalf("Peek(%s): got %q, Parse gave %q", key, got, want)
		}
	}
	if got, ok := envelope.Peek(note, "expires"); ok {
		if at, err := time.Parse(time.RFC3339Nano, got); err == nil && !at.Equal(e.Expires) {
			t.Fatalf("Peek(expires): got %v, Parse gave %v", at, e.Expires)
		}
	}
}
