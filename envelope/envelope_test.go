package envelope_test

import (
	"bytes"
	"errors"
	"flag"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/countersign/countersign/envelope"
)

var update = flag.Bool("update", false, "rewrite the golden files in testdata/")

var created = time.Date(2026, 11, 30, 9, 15, 2, 0, time.UTC)

// unresolved is the envelope of DESIGN.md: a send that timed out after the request.
func unresolved() envelope.Envelope {
	return envelope.Envelope{
		OperationID:   "op-7k2m9q",
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
		Excerpt:       "Hello ***",
	}
}

func resolved() envelope.Envelope {
	e := unresolved()
	e.Resolve(true, "@alice", created.Add(47*time.Minute))
	return e
}

func TestRenderGolden(t *testing.T) {
	tests := []struct {
		name string
		env  envelope.Envelope
	}{
		{"unresolved", unresolved()},
		{"resolved", resolved()},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := tt.env.Render()
			if err != nil {
				t.Fatalf("Render: %v", err)
			}
			path := filepath.Join("testdata", tt.name+".golden")
			if *update {
				if err := os.WriteFile(path, got, 0o644); err != nil {
					t.Fatal(err)
				}
			}
			want, err := os.ReadFile(path)
			if err != nil {
				t.Fatalf("%v (run go test -update to create it)", err)
			}
			if !bytes.Equal(got, want) {
				t.Errorf("Render:\ngot:\n%s\nwant:\n%s", got, want)
			}
		})
	}
}

func TestResolve(t *testing.T) {
	at := time.Date(2026, 12, 1, 8, 0, 0, 0, time.FixedZone("CET", 3600))
	tests := []struct {
		name                    string
		delivered               bool
		status                  envelope.Status
		next, resolution, retry string
	}{
		{"delivered", true, envelope.StatusCommitted, envelope.NextNone, envelope.ResolutionDelivered, "- Retry without verification: not needed (delivered)\n"},
		{"not delivered", false, envelope.StatusNotCommitted, envelope.NextRetryAllowed, envelope.ResolutionNotDelivered, "- Retry without verification: allowed\n"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			e := unresolved()
			e.Resolve(tt.delivered, "@bob", at)
			if e.Unresolved() {
				t.Errorf("Unresolved() = true after Resolve")
			}
			got := []string{string(e.Status), e.NextAction, e.Resolution, e.ResolvedBy}
			want := []string{string(tt.status), tt.next, tt.resolution, "@bob"}
			if !reflect.DeepEqual(got, want) {
				t.Errorf("status, next, resolution, by: got %q, want %q", got, want)
			}
			if e.ResolvedAt == nil || !e.ResolvedAt.Equal(at) || e.ResolvedAt.Location() != time.UTC {
				t.Errorf("ResolvedAt: got %v, want %v in UTC", e.ResolvedAt, at)
			}
			note, err := e.Render()
			if err != nil {
				t.Fatal(err)
			}
			for _, line := range []string{tt.retry, "- Resolved: " + tt.resolution + " by @bob at 2026-12-01T07:00:00Z\n"} {
				if !bytes.Contains(note, []byte(line)) {
					t.Errorf("note lacks %q:\n%s", line, note)
				}
			}
			if bytes.Contains(note, []byte("- Verify:")) {
				t.Errorf("resolved note still asks to verify:\n%s", note)
			}
		})
	}
}

func TestRoundTrip(t *testing.T) {
	at := created.Add(90 * time.Second)
	tricky := "line one\n---\nline \"two\" — ünïcødé 🙂\ttab\r\n...\n--- "
	tests := []struct {
		name string
		edit func(*envelope.Envelope)
	}{
		{"unresolved", func(*envelope.Envelope) {}},
		{"resolved", func(e *envelope.Envelope) { *e = resolved() }},
		{"fence in response and excerpt", func(e *envelope.Envelope) { e.Response, e.Excerpt = tricky, tricky }},
		{"fence in every string", func(e *envelope.Envelope) {
			e.Action, e.Tool, e.LastConfirmed, e.NextAction = tricky, tricky, tricky, tricky
			e.Target, e.PayloadSHA256, e.Resolution, e.ResolvedBy = tricky, tricky, tricky, tricky
		}},
		{"quotes", func(e *envelope.Envelope) { e.Response, e.Excerpt = `"quoted" at start`, `say "hi" 'there'` }},
		{"response with quote only at start", func(e *envelope.Envelope) { e.Response = `"unfinished` }},
		{"surrounding space", func(e *envelope.Envelope) { e.Response, e.Excerpt = "  padded  ", " " }},
		{"empty body facts", func(e *envelope.Envelope) { e.Response, e.Excerpt = "", "" }},
		{"channel target", func(e *envelope.Envelope) { e.Target, e.Action = "@countersign_news", envelope.ActionPublishPost }},
		{"supergroup target", func(e *envelope.Envelope) { e.Target = "-1001234567890" }},
		{"yaml look-alikes", func(e *envelope.Envelope) { e.Tool, e.LastConfirmed, e.PayloadSHA256 = "yes", "null", "12e3" }},
		{"unicode", func(e *envelope.Envelope) {
			e.Response, e.Excerpt = "délai dépassé ✓ 超时", "Привет, мир…"
		}},
		{"line separators", func(e *envelope.Envelope) { e.Response = "a\u2028b\u0085c\ufeffd\x00e" }},
		{"leading line breaks", func(e *envelope.Envelope) { e.Target, e.Tool, e.LastConfirmed = "\n", "\n\nx", "\n " }},
		{"invalid utf-8", func(e *envelope.Envelope) { e.Excerpt, e.Response = "\xff\xfe", "bad \xc3" }},
		{"nanoseconds, no expiry", func(e *envelope.Envelope) {
			e.Created, e.Expires = created.Add(123456789), time.Time{}
		}},
		{"all optional fields", func(e *envelope.Envelope) {
			e.Status, e.NextAction, e.Attempts = envelope.StatusNotCommitted, envelope.NextRetryAllowed, 3
			e.Resolution, e.ResolvedBy, e.ResolvedAt, e.SecretWithheld = "not_delivered", "alice", &at, true
		}},
		{"hand resolved", func(e *envelope.Envelope) { e.Status, e.NextAction = envelope.StatusCommitted, envelope.NextNone }},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			want := unresolved()
			tt.edit(&want)
			note, err := want.Render()
			if err != nil {
				t.Fatalf("Render: %v", err)
			}
			got, err := envelope.Parse(note)
			if err != nil {
				t.Fatalf("Parse: %v\n%s", err, note)
			}
			if !reflect.DeepEqual(got, want) {
				t.Errorf("Parse(Render(e)):\ngot  %#v\nwant %#v\nnote:\n%s", got, want, note)
			}
			again, err := got.Render()
			if err != nil {
				t.Fatalf("Render again: %v", err)
			}
			if !bytes.Equal(again, note) {
				t.Errorf("Render(Parse(Render(e))):\ngot:\n%s\nwant:\n%s", again, note)
			}
		})
	}
}

func TestRenderTimesInUTC(t *testing.T) {
	e := unresolved()
	e.Created = created.In(time.FixedZone("PST", -8*3600))
	note, err := e.Render()
	if err != nil {
		t.Fatal(err)
	}
	if want := "created: 2026-11-30T09:15:02Z\n"; !bytes.Contains(note, []byte(want)) {
		t.Errorf("note lacks %q:\n%s", want, note)
	}
}

func TestRenderRejectsInvalid(t *testing.T) {
	tests := []struct {
		name string
		edit func(*envelope.Envelope)
	}{
		{"no operation id", func(e *envelope.Envelope) { e.OperationID = "" }},
		{"path in operation id", func(e *envelope.Envelope) { e.OperationID = "../op" }},
		{"glob in operation id", func(e *envelope.Envelope) { e.OperationID = "op-*" }},
		{"operation id too long", func(e *envelope.Envelope) { e.OperationID = strings.Repeat("a", 129) }},
		{"no status", func(e *envelope.Envelope) { e.Status = "" }},
		{"unknown status", func(e *envelope.Envelope) { e.Status = "delivered" }},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			e := unresolved()
			tt.edit(&e)
			_, err := e.Render()
			if !errors.Is(err, envelope.ErrInvalid) {
				t.Errorf("Render: got %v, want %v", err, envelope.ErrInvalid)
			}
		})
	}
}

// golden returns the unresolved golden note with old replaced by new.
func golden(t *testing.T, old, new string) []byte {
	t.Helper()
	data, err := os.ReadFile(filepath.Join("testdata", "unresolved.golden"))
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Contains(data, []byte(old)) {
		t.Fatalf("golden note lacks %q", old)
	}
	return bytes.Replace(data, []byte(old), []byte(new), 1)
}

func TestParseRejects(t *testing.T) {
	tests := []struct {
		name string
		note []byte
		want error
	}{
		{"empty", nil, envelope.ErrNoFrontMatter},
		{"body only", []byte("- Request created: yes\n"), envelope.ErrNoFrontMatter},
		{"text before front matter", golden(t, "---\n", "# title\n---\n"), envelope.ErrNoFrontMatter},
		{"unterminated", golden(t, "---\n\n", "\n"), envelope.ErrUnterminated},
		{"only an opening fence", []byte("\n  ---  \n"), envelope.ErrUnterminated},
		{"bad yaml", golden(t, "status: unknown", "status: [unknown"), envelope.ErrYAML},
		{"unknown key", golden(t, "attempts: 1\n", "attempts: 1\nnote: hi\n"), envelope.ErrYAML},
		{"duplicate key", golden(t, "attempts: 1\n", "attempts: 1\nstatus: committed\n"), envelope.ErrYAML},
		{"wrong type", golden(t, "attempts: 1", "attempts: many"), envelope.ErrYAML},
		{"bad time", golden(t, "created: 2026-11-30T09:15:02Z", "created: yesterday"), envelope.ErrYAML},
		{"a list", []byte("---\n- a\n---\n"), envelope.ErrYAML},
		{"two documents", golden(t, "attempts: 1\n", "attempts: 1\n--- second\n"), envelope.ErrYAML},
		{"empty front matter", []byte("---\n---\nbody\n"), envelope.ErrInvalid},
		{"missing operation id", golden(t, "operation_id: op-7k2m9q\n", ""), envelope.ErrInvalid},
		{"null operation id", golden(t, "operation_id: op-7k2m9q", "operation_id: ~"), envelope.ErrInvalid},
		{"operation id with a slash", golden(t, "operation_id: op-7k2m9q", "operation_id: ../etc/op"), envelope.ErrInvalid},
		{"missing status", golden(t, "status: unknown\n", ""), envelope.ErrInvalid},
		{"status outside the three", golden(t, "status: unknown", "status: Unknown"), envelope.ErrInvalid},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := envelope.Parse(tt.note)
			if !errors.Is(err, tt.want) {
				t.Errorf("Parse: got %v, want %v", err, tt.want)
			}
			if !reflect.DeepEqual(got, envelope.Envelope{}) {
				t.Errorf("Parse returned %#v along with an error", got)
			}
		})
	}
}

func TestParseHandEdits(t *testing.T) {
	tests := []struct {
		name string
		note []byte
		want func(*envelope.Envelope)
	}{
		{"resolved by hand", golden(t, "status: unknown\n", "status: committed\n"),
			func(e *envelope.Envelope) { e.Status = envelope.StatusCommitted }},
		{"unquoted numeric target", golden(t, `target: "222"`, "target: 222"), func(*envelope.Envelope) {}},
		{"CRLF line ends", bytes.ReplaceAll(golden(t, "x", "x"), []byte("\n"), []byte("\r\n")), func(*envelope.Envelope) {}},
		{"comment and blank lines", golden(t, "---\n", "\n\n---\n# checked by alice\n"), func(*envelope.Envelope) {}},
		{"body lines removed", golden(t, "- Excerpt: \"Hello ***\"\n", ""), func(e *envelope.Envelope) { e.Excerpt = "" }},
		{"unquoted excerpt", golden(t, `- Excerpt: "Hello ***"`, "- Excerpt:   Hello ***  "), func(*envelope.Envelope) {}},
		{"local time", golden(t, "created: 2026-11-30T09:15:02Z", "created: 2026-11-30T10:15:02+01:00"), func(*envelope.Envelope) {}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := envelope.Parse(tt.note)
			if err != nil {
				t.Fatalf("Parse: %v", err)
			}
			want := unresolved()
			tt.want(&want)
			if !reflect.DeepEqual(got, want) {
				t.Errorf("Parse:\ngot  %#v\nwant %#v", got, want)
			}
		})
	}
}

// The note says what a person checks for each kind of operation: a message or
// a post in its chat, every item of an album, and for any other action (an
// edit, a pin, an HTTP call) whether it took effect at its target, never
// "look for the message".
func TestRenderSaysWhatToCheck(t *testing.T) {
	album := unresolved()
	album.Action, album.Items = "send_album", []string{`1. photo "a.png", sha256 4f1c`, `2. photo "b.png", sha256 9e2d`}
	edit := unresolved()
	edit.Action, edit.Tool = "edit_message", "commit_edit_message"
	call := unresolved()
	call.Action, call.Tool, call.Target = "http_request", "commit_create_ticket", "api.tickets.example"
	post := unresolved()
	post.Action = envelope.ActionPublishPost
	for name, tt := range map[string]struct {
		e    envelope.Envelope
		want string
	}{
		"a message":    {unresolved(), "look for the message in chat 222; then `/resolve op-7k2m9q"},
		"a post":       {post, "look for the post in chat 222;"},
		"an album":     {album, "look in chat 222 for each of the 2 items listed above;"},
		"an edit":      {edit, "check at 222 whether its edit_message took effect (`countersign ops show op-7k2m9q` says exactly what it does);"},
		"an HTTP call": {call, "check at api.tickets.example whether its http_request took effect"},
	} {
		b, err := tt.e.Render()
		if err != nil {
			t.Fatal(err)
		}
		if !strings.Contains(string(b), tt.want) {
			t.Errorf("%s: note lacks %q:\n%s", name, tt.want, b)
		}
	}
}
