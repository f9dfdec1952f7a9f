package review_test

import (
	"bytes"
	"context"
	"fmt"
	"html"
	"net/http"
	"net/http/httptest"
	"regexp"
	"strings"
	"testing"

	"github.com/countersign/countersign/command"
	"github.com/countersign/countersign/internal/fakeapi"
	"github.com/countersign/countersign/journal"
	"github.com/countersign/countersign/policy"
	"github.com/countersign/countersign/review"
	"github.com/countersign/countersign/telegram"
	"github.com/countersign/countersign/telegram/telegramtest"
)

// withTickets declares commit_create_ticket, a POST of a JSON body to srv
// with a path placeholder, a secret header and an idempotency key.
func withTickets(t *testing.T, srv *fakeapi.Server) rigOption {
	p, err := policy.Parse(strings.NewReader(`tools:
  commit_create_ticket:
    side_effect: committed
    approval: required
    http:
      method: POST
      url: "` + srv.URL + `/v1/{project}/tickets?label={label}"
      hosts: ["127.0.0.1"]
      headers: {Authorization: {env: TICKETS_TOKEN, prefix: "Bearer "}}
      body_schema: {type: object, required: [title], properties: {title: {type: string}}}
      evidence: /id
      idempotency: header
`))
	if err != nil {
		t.Fatal(err)
	}
	return func(pol *policy.Policy) { pol.Tools["commit_create_ticket"] = p.Tools["commit_create_ticket"] }
}

// web serves files for the file tools: a path's bytes, with its type.
func web(t *testing.T, files map[string][]byte) *httptest.Server {
	s := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, req *http.Request) {
		if strings.HasSuffix(req.URL.Path, ".txt") {
			w.Header().Set("Content-Type", "text/plain; charset=utf-8")
		}
		w.Write(files[req.URL.Path])
	}))
	t.Cleanup(s.Close)
	return s
}

// sent makes a message the bot sent to target, approved and committed, for an
// edit or a delete to act on.
func (r *rig) sent(text string) string {
	r.t.Helper()
	opID := r.call("commit_send_message", map[string]any{"chat_id": fmt.Sprint(target), "text": text})
	a := r.approval(opID)
	if _, err := r.h.Tap(r.t.Context(), command.Tap{User: alice, Name: "alice", Button: command.Approve, Ref: a.ID}); err != nil {
		r.t.Fatal(err)
	}
	r.waitState(opID, journal.Committed)
	return opID
}

// kind is one kind of payload: how it is asked for, and what its page must
// show (each a piece of the page's text content, in order).
type kind struct {
	name  string
	tools []string
	ask   func(r *rig) string
	shows func(r *rig) []string
}

var (
	longText = strings.Repeat("Every word of this text reaches the chat; ", 250) + "the last words."
	photoA   = telegramtest.PNG(&testing.T{}, 12, 8, 10)
	photoB   = telegramtest.PNG(&testing.T{}, 12, 8, 90)
	document = []byte("line one of the report\nline two: <b>not markup</b>\n")
	ticketSv *fakeapi.Server
)

func kinds(t *testing.T) []kind {
	files := web(t, map[string][]byte{"/a.png": photoA, "/b.png": photoB, "/report.txt": document})
	return []kind{
		{"long text", nil, func(r *rig) string {
			return r.call("commit_send_message", map[string]any{"chat_id": "222", "text": longText})
		}, func(r *rig) []string {
			parts := r.approval(r.lastOp).Operation.Payload.Parts
			out := []string{"send_message"}
			for i, p := range parts {
				out = append(out, fmt.Sprintf("Message %d of %d", i+1, len(parts)), p)
			}
			return out
		}},
		{"photo", []string{"commit_send_photo"}, func(r *rig) string {
			return r.call("commit_send_photo", map[string]any{"chat_id": "222", "file": files.URL + "/a.png", "caption": "the chart"})
		}, func(r *rig) []string {
			return []string{"photo “a.png”", telegramtest.SHA256(photoA), "the chart"}
		}},
		{"album", []string{"commit_send_album"}, func(r *rig) string {
			return r.call("commit_send_album", map[string]any{"chat_id": "222", "files": []map[string]string{
				{"file": files.URL + "/a.png", "caption": "first"}, {"file": files.URL + "/b.png", "caption": "second"}}})
		}, func(r *rig) []string {
			return []string{"Files (2)", "a.png", telegramtest.SHA256(photoA), "first", "b.png", telegramtest.SHA256(photoB), "second"}
		}},
		{"document", []string{"commit_send_document"}, func(r *rig) string {
			return r.call("commit_send_document", map[string]any{"chat_id": "222", "file": files.URL + "/report.txt"})
		}, func(r *rig) []string {
			return []string{"document “report.txt”", fmt.Sprintf("(%d bytes)", len(document)), telegramtest.SHA256(document), string(document)}
		}},
		{"http", []string{}, func(r *rig) string {
			return r.call("commit_create_ticket", map[string]any{"project": "ops team", "label": "p1&x", "body": map[string]any{"title": "relay audit", "notes": []string{"a", "b"}}})
		}, func(r *rig) []string {
			return []string{"POST", "/v1/ops%20team/tickets?label=p1%26x", "{project}", "ops team", "{label}", "p1&x",
				"Authorization", "$TICKETS_TOKEN from the bot's environment, withheld", "Idempotency-Key",
				"{\n  \"notes\": [\n    \"a\",\n    \"b\"\n  ],\n  \"title\": \"relay audit\"\n}"}
		}},
		{"edit", []string{"commit_edit_message"}, func(r *rig) string {
			sent := r.sent("the meeting is on Monday at noon")
			return r.call("commit_edit_message", map[string]any{"operation_id": sent, "text": "the meeting is on Tuesday at noon"})
		}, func(r *rig) []string {
			return []string{"the meeting is on ", "Monday ", "Tuesday ", "at noon"}
		}},
		{"delete", []string{"commit_delete_message"}, func(r *rig) string {
			sent := r.sent("a message to take back")
			return r.call("commit_delete_message", map[string]any{"operation_id": sent})
		}, func(r *rig) []string {
			return []string{"Deletes, for everyone, message", "It reads now:", "a message to take back"}
		}},
		{"poll", []string{"commit_send_poll"}, func(r *rig) string {
			return r.call("commit_send_poll", map[string]any{"chat_id": "222", "question": "Lunch on Friday?", "options": []string{"Pizza", "Sushi", "Both"}, "public": true})
		}, func(r *rig) []string {
			return []string{"Lunch on Friday?", "Pizza", "Sushi", "Both", "Public: everyone sees who voted.", "One answer each."}
		}},
	}
}

var tags = regexp.MustCompile(`<[^>]*>`)

// textOf is the text a page's HTML shows, as a browser's textContent reads it.
func textOf(h string) string { return html.UnescapeString(tags.ReplaceAllString(h, "")) }

// Every kind of payload has a card with a 🔎 Whole payload button that opens
// the page of its approval, and that page shows it whole (every message of a
// long text, photos, a document's contents, an HTTP call's placeholders and
// indented body with its headers' values withheld, an edit's diff, a delete's
// quote, a poll), under the hash the card shows.
func TestEveryKindOfPayloadIsShownWhole(t *testing.T) {
	t.Parallel()
	ticketSv = fakeapi.New(t)
	for _, k := range kinds(t) {
		t.Run(k.name, func(t *testing.T) {
			t.Parallel()
			r := newRig(t, withTools(k.tools...), withTickets(t, ticketSv))
			r.lastOp = k.ask(r)
			a := r.approval(r.lastOp)
			if err := review.Shows(a.Operation.Payload); err != nil {
				t.Errorf("Shows refuses a payload the page shows: %v", err)
			}
			card := r.card(alice, r.lastOp)
			if want := review.PageURL(r.page.URL, a.ID); !strings.Contains(string(card.ReplyMarkup), `"web_app":{"url":"`+want+`"}`) {
				t.Errorf("card's buttons %s, want a web_app button to %s", card.ReplyMarkup, want)
			}
			if !strings.Contains(card.Text, "sha256 "+a.PayloadSHA256[:12]) || !strings.Contains(card.Text, "🔎 Whole payload (below)") {
				t.Errorf("card does not point to the page under its hash:\n%s", card.Text)
			}
			got := r.show(a.ID, alice)
			if got.Status != http.StatusOK || got.SHA256 != a.PayloadSHA256 {
				t.Fatalf("show = %d %q, want the payload under %s", got.Status, got.Error, a.PayloadSHA256[:12])
			}
			text := textOf(got.HTML)
			for _, want := range []string{a.PayloadSHA256, a.Operation.ID, a.Verdict} {
				if !strings.Contains(text, want) {
					t.Errorf("the page lacks %q:\n%s", want, text)
				}
			}
			rest := text
			for _, want := range k.shows(r) {
				i := strings.Index(rest, want)
				if i < 0 {
					t.Fatalf("the page lacks %q (in order):\n%s", want, text)
				}
				rest = rest[i+len(want):]
			}
			if strings.Contains(got.HTML, ticketsToken) {
				t.Errorf("the page shows a header's secret value")
			}
			photos := 0
			for _, f := range a.Operation.Payload.Files {
				if f.Kind == "photo" {
					photos++
				}
			}
			if n := r.checkImages(got.HTML); n != photos {
				t.Errorf("the page shows %d images, want the payload's %d photos", n, photos)
			}
		})
	}
}

// checkImages fetches every image the page shows, and checks each is the
// stored photo (its hash is in its address).
func (r *rig) checkImages(page string) int {
	r.t.Helper()
	n := 0
	for _, m := range regexp.MustCompile(`src="\./(file/[^"]+)"`).FindAllStringSubmatch(page, -1) {
		u := r.page.URL + review.Path + "/" + html.UnescapeString(m[1])
		res, err := http.Get(u)
		if err != nil {
			r.t.Fatal(err)
		}
		var b bytes.Buffer
		b.ReadFrom(res.Body)
		res.Body.Close()
		if res.StatusCode != http.StatusOK || !strings.Contains(u, telegramtest.SHA256(b.Bytes())) {
			r.t.Errorf("image %s: %d, %d bytes hashing to %s", u, res.StatusCode, b.Len(), telegramtest.SHA256(b.Bytes())[:12])
		}
		forged := strings.Replace(u, "mac=", "mac=x", 1)
		if res, err := http.Get(forged); err != nil || res.StatusCode != http.StatusForbidden {
			r.t.Errorf("an image address with a forged MAC: %v %v, want 403", res.StatusCode, err)
		}
		n++
	}
	return n
}

// A card that cannot hold its payload says what it leaves out.
func TestACardSaysWhatItLeavesOutForThePage(t *testing.T) {
	t.Parallel()
	files := web(t, map[string][]byte{"/report.txt": document})
	r := newRig(t, withTools("commit_send_document"))
	opID := r.call("commit_send_document", map[string]any{"chat_id": "222", "file": files.URL + "/report.txt"})
	card := r.card(alice, opID)
	if want := `This card leaves out what the document holds: the card names it by its SHA-256, and the bot keeps those exact bytes in its data folder (files/), where they can be opened. 🔎 Whole payload (below) shows them`; !strings.Contains(card.Text, want) {
		t.Errorf("card lacks %q:\n%s", want, card.Text)
	}
	if !strings.Contains(string(card.ReplyMarkup), telegram.WholePayload) {
		t.Errorf("card has no %s button: %s", telegram.WholePayload, card.ReplyMarkup)
	}
	_ = context.Background
}
