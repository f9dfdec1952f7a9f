package envelope_test

import (
	"bytes"
	"os"
	"path/filepath"
	"reflect"
	"strings"
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

// FuzzRender builds envelopes from arbitrary field values and checks that every one
// Render accepts parses back to itself and renders to the same bytes: no value, a
// target with a "---" line or a response that reads "status: committed" included,
// can end the front matter early or pass for another field. Peek, which the vault's
// listing uses to skip notes unparsed, agrees with Parse on every rendered note.
func FuzzRender(f *testing.F) {
	f.Add("op-7k2m9q", "send_message", "commit_send_message", byte(0), "222", "prepared", "verify-before-retry",
		"timeout after the request was sent", "Hello ***", "@alice", int64(1795943702), 1)
	f.Add("op-1", "publish_post", "x\n---\nstatus: committed", byte(1), "\"222\"\n---", "null", "yes",
		"\"unfinished", " ", "a\u2028b\x00", int64(0), 0)
	f.Add("op-2", "", "", byte(2), "@x'y", "- a", "? b", "- Excerpt: \"forged\"", "\xff\xfe", "", int64(-1), -3)
	f.Fuzz(func(t *testing.T, id, action, tool string, status byte, target, last, next, response, excerpt, by string, secs int64, attempts int) {
		statuses := []envelope.Status{envelope.StatusUnknown, envelope.StatusCommitted, envelope.StatusNotCommitted}
		// Times as the clock gives them: UTC, within the years RFC 3339 can write.
		at := time.Unix(secs%253402300799, secs%1e9).UTC()
		if at.Year() < 1 {
			at = time.Time{}
		}
		e := envelope.Envelope{OperationID: id, Action: action, Tool: tool, Status: statuses[int(status)%3],
			LastConfirmed: last, NextAction: next, Target: target, PayloadSHA256: strings.Repeat("ab", 32),
			Created: at, Expires: at.Add(7 * 24 * time.Hour), Attempts: attempts, Response: response, Excerpt: excerpt}
		if e.Status != envelope.StatusUnknown {
			e.Resolve(e.Status == envelope.StatusCommitted, by, at)
		}
		note, err := e.Render()
		if err != nil {
			if envelope.CheckID(id) == nil {
				t.Fatalf("Render of a valid envelope: %v", err)
			}
			return
		}
		got, err := envelope.Parse(note)
		if err != nil {
			t.Fatalf("Parse(Render(e)): %v\n%s", err, note)
		}
		if !reflect.DeepEqual(got, e) {
			t.Fatalf("Parse(Render(e)):\ngot  %#v\nwant %#v\nnote:\n%s", got, e, note)
		}
		checkPeek(t, note, got)
		again, err := got.Render()
		if err != nil || !bytes.Equal(again, note) {
			t.Fatalf("Render(Parse(Render(e))) differs (%v):\n%s\nwant:\n%s", err, again, note)
		}
	})
}
