package review_test

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/countersign/countersign/internal/chromium"
	"github.com/countersign/countersign/internal/fakeapi"
	"github.com/countersign/countersign/journal"
	"github.com/countersign/countersign/policy"
	"github.com/countersign/countersign/review"
	"github.com/countersign/countersign/stepup"
)

// open opens approval apID's page as the Mini App, with init data in the
// Telegram object the test provides, and waits until it has loaded or
// refused.
func (r *rig) open(ctx context.Context, b *chromium.Browser, apID, initData string) *chromium.Page {
	r.t.Helper()
	r.webApp.Store(initData)
	p, err := b.Open(ctx, review.PageURL(r.page.URL, apID))
	if err != nil {
		r.t.Fatal(err)
	}
	if err := p.WaitFor(ctx, `document.getElementById("status").textContent !== "Loading the payload…"`); err != nil {
		r.t.Fatal(err)
	}
	return p
}

// dom is what the page shows: its status line, the payload's text, and
// whether the decision's buttons are there.
type dom struct {
	Status  string `json:"status"`
	Refused bool   `json:"refused"`
	Payload string `json:"payload"`
	Buttons bool   `json:"buttons"`
	Images  []int  `json:"images"` // each image's natural width: 0 for one not drawn
	Calls   []string
}

func (r *rig) dom(ctx context.Context, p *chromium.Page) dom {
	r.t.Helper()
	var d dom
	err := p.Eval(ctx, `({status: document.getElementById("status").textContent,
	  refused: document.getElementById("status").className === "refused",
	  payload: document.getElementById("payload").innerText,
	  buttons: !document.getElementById("decide").hidden,
	  images: [...document.querySelectorAll("img")].map((i) => i.naturalWidth),
	  calls: window.Telegram.WebApp.calls})`, &d)
	if err != nil {
		r.t.Fatal(err)
	}
	return d
}

// shot takes the page's screenshot into the test's folder (and into
// $COUNTERSIGN_SCREENSHOTS when set, to look at).
func shot(t *testing.T, ctx context.Context, p *chromium.Page, name string) {
	t.Helper()
	png, err := p.Screenshot(ctx)
	if err != nil {
		t.Fatal(err)
	}
	dirs := []string{t.TempDir()}
	if d := os.Getenv("COUNTERSIGN_SCREENSHOTS"); d != "" {
		dirs = append(dirs, d)
	}
	for _, d := range dirs {
		if err := os.WriteFile(filepath.Join(d, name+".png"), png, 0o600); err != nil {
			t.Fatal(err)
		}
	}
}

// In a browser, as Telegram opens it: the Mini App page with the Telegram
// object the test provides shows the payload to its approver, is refused to
// forged, expired and a stranger's init data (nothing of the payload shown,
// no buttons), and its Approve sends the message, seen at the Bot API.
func TestTheMiniAppShowsItsApproverThePayloadAndApproves(t *testing.T) {
	t.Parallel()
	b := chromium.ForTest(t)
	r := newRig(t)
	ctx, cancel := context.WithTimeout(t.Context(), 2*time.Minute)
	defer cancel()
	opID := r.call("commit_send_message", map[string]any{"chat_id": "222", "text": "from the Mini App"})
	a := r.approval(opID)
	signed := func(tok string, user int64, at time.Time) string {
		return review.SignInitData(tok, review.InitUser{ID: user, FirstName: "x"}, at, nil)
	}
	refusals := []struct{ name, initData, says string }{
		{"forged", signed("7009999999:AAHdqTcvCH1vGWJxfSeofSAs0K5PALDsaw", alice, time.Now()), "does not check"},
		{"expired", signed(token, alice, time.Now().Add(-31*time.Minute)), "more than 30 minutes ago"},
		{"a stranger's", signed(token, mallory, time.Now()), "not an approver"},
		{"none", "", "Open this page from the 🔎 Whole payload button"},
	}
	for _, c := range refusals {
		p := r.open(ctx, b, a.ID, c.initData)
		d := r.dom(ctx, p)
		if !d.Refused || !strings.Contains(d.Status, c.says) || d.Buttons || strings.Contains(d.Payload, "from the Mini App") {
			t.Errorf("%s init data: %+v, want refused with %q, nothing shown", c.name, d, c.says)
		}
	}
	p := r.open(ctx, b, a.ID, r.initData(bob))
	d := r.dom(ctx, p)
	if d.Refused || !d.Buttons || !strings.Contains(d.Payload, "from the Mini App") || !strings.Contains(d.Status, a.PayloadSHA256[:12]) ||
		strings.Join(d.Calls, ",") != "ready,expand" {
		t.Fatalf("bob's page: %+v", d)
	}
	shot(t, ctx, p, "approver")
	if err := p.Click(ctx, "#approve", ""); err != nil {
		t.Fatal(err)
	}
	if err := p.WaitFor(ctx, `document.body.dataset.decided === "approve"`); err != nil {
		t.Fatal(err)
	}
	if d := r.dom(ctx, p); !strings.Contains(d.Status, "✅ Approved by user200 (200)") || !strings.Contains(d.Status, "Sent "+opID) {
		t.Errorf("after Approve the page says %q", d.Status)
	}
	r.waitState(opID, journal.Committed)
	if ms := r.srv.Messages(target); len(ms) != 1 || ms[0].Text != "from the Mini App" {
		t.Errorf("the chat holds %+v, want the message approved", ms)
	}
}

// A page opened before an edit: its Approve is refused, says why, and sends
// nothing; the new text waits on a card of its own.
func TestTheMiniAppsApproveOfAPayloadEditedSinceIsRefused(t *testing.T) {
	t.Parallel()
	b := chromium.ForTest(t)
	r := newRig(t)
	ctx, cancel := context.WithTimeout(t.Context(), 2*time.Minute)
	defer cancel()
	opID := r.call("commit_send_message", map[string]any{"chat_id": "222", "text": "before the edit"})
	a := r.approval(opID)
	p := r.open(ctx, b, a.ID, r.initData(bob))
	if _, err := r.h.Amend(ctx, a.ID, alice, "after the edit"); err != nil {
		t.Fatal(err)
	}
	if err := p.Click(ctx, "#approve", ""); err != nil {
		t.Fatal(err)
	}
	if err := p.WaitFor(ctx, `document.getElementById("status").className === "refused"`); err != nil {
		t.Fatal(err)
	}
	if d := r.dom(ctx, p); !strings.Contains(d.Status, "Already edited") {
		t.Errorf("the page says %q, want the edit named", d.Status)
	}
	shot(t, ctx, p, "edited-since")
	if s := r.state(opID); s != journal.AwaitingApproval || len(r.srv.Messages(target)) != 0 {
		t.Errorf("state %s with %d sent, want nothing sent", s, len(r.srv.Messages(target)))
	}
}

// Every kind of payload, in the browser: what the page shows, read from the
// DOM, in order, photos drawn; and a screenshot of each.
func TestEveryKindOfPayloadInTheBrowser(t *testing.T) {
	t.Parallel()
	b := chromium.ForTest(t)
	ticketSv = fakeapi.New(t)
	for _, k := range kinds(t) {
		t.Run(k.name, func(t *testing.T) {
			r := newRig(t, withTools(k.tools...), withTickets(t, ticketSv))
			ctx, cancel := context.WithTimeout(t.Context(), time.Minute)
			defer cancel()
			r.lastOp = k.ask(r)
			a := r.approval(r.lastOp)
			p := r.open(ctx, b, a.ID, r.initData(alice))
			// An image's load changes no node: wait on the loads themselves.
			if err := p.Eval(ctx, `Promise.all([...document.querySelectorAll("img")].map((i) =>
			  i.complete ? true : new Promise((done) => { i.onload = i.onerror = done; })))`, nil); err != nil {
				t.Fatal(err)
			}
			d := r.dom(ctx, p)
			rest := d.Payload
			for _, want := range k.shows(r) {
				i := strings.Index(rest, want)
				if i < 0 {
					b, _ := json.Marshal(d.Payload)
					t.Fatalf("the page lacks %q (in order):\n%s", want, b)
				}
				rest = rest[i+len(want):]
			}
			photos := 0
			for _, f := range a.Operation.Payload.Files {
				if f.Kind == "photo" {
					photos++
				}
			}
			drawn := 0
			for _, w := range d.Images {
				if w > 0 {
					drawn++
				}
			}
			if drawn != photos || len(d.Images) != photos {
				t.Errorf("images drawn %v, want the %d photos", d.Images, photos)
			}
			shot(t, ctx, p, strings.ReplaceAll(k.name, " ", "-"))
		})
	}
}

// A Mini App approval of a request that asks a second factor (step_up: totp)
// takes the approver's code on the page: without it, or with a wrong one,
// nothing is sent; with it, the message is.
func TestTheMiniAppTakesTheCodeOfAStepUpApproval(t *testing.T) {
	t.Parallel()
	b := chromium.ForTest(t)
	r := newRig(t, func(p *policy.Policy) {
		tool := p.Tools["commit_send_message"]
		tool.StepUp = policy.FactorTOTP
		p.Tools["commit_send_message"] = tool
	})
	ctx, cancel := context.WithTimeout(t.Context(), 2*time.Minute)
	defer cancel()
	secret, err := stepup.NewSecret()
	if err != nil {
		t.Fatal(err)
	}
	if err := r.j.EnrolTOTP(ctx, bob, secret, false); err != nil {
		t.Fatal(err)
	}
	opID := r.call("commit_send_message", map[string]any{"chat_id": "222", "text": "with a second factor"})
	a := r.approval(opID)
	p := r.open(ctx, b, a.ID, r.initData(bob))
	var asks bool
	if err := p.Eval(ctx, `!document.getElementById("asks-code").hidden`, &asks); err != nil || !asks {
		t.Fatalf("the page asks no code (%v)", err)
	}
	if d := r.dom(ctx, p); !strings.Contains(d.Payload, "Second factor\neach approver confirms with a TOTP code (step_up)") {
		t.Errorf("the page does not say the approval asks a code:\n%s", d.Payload)
	}
	if err := p.Click(ctx, "#approve", ""); err != nil {
		t.Fatal(err)
	}
	if err := p.WaitFor(ctx, `document.getElementById("status").textContent.includes("asks for a second factor")`); err != nil {
		t.Fatal(err)
	}
	code, err := stepup.Code(secret, time.Now())
	if err != nil {
		t.Fatal(err)
	}
	if err := p.Type(ctx, "#code", code); err != nil {
		t.Fatal(err)
	}
	shot(t, ctx, p, "step-up")
	if err := p.Click(ctx, "#approve", ""); err != nil {
		t.Fatal(err)
	}
	if err := p.WaitFor(ctx, `document.body.dataset.decided === "approve"`); err != nil {
		t.Fatal(err)
	}
	r.waitState(opID, journal.Committed)
	if ms := r.srv.Messages(target); len(ms) != 1 {
		t.Errorf("%d messages sent, want the one approved with its code", len(ms))
	}
	votes, err := r.j.Approval(ctx, a.ID)
	if err != nil || votes.Decision != journal.DecideApprove {
		t.Errorf("approval %+v, %v; want approved", votes, err)
	}
}
