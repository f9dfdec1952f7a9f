package main

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/countersign/countersign/internal/chromium"
)

// The demo's web page in a real browser: a send typed in the phone's chat gets
// a card, a click on Approve delivers it to the target chat; Edit's prompt
// takes the next message as the new text, whose card Reject closes; the unknown-outcome
// button makes the next send's answer get lost, whose notice appears with It
// arrived / It did not arrive and whose envelope appears in the vault panel,
// rewritten once It did not arrive is clicked.
func TestDemoWebPageInChromium(t *testing.T) {
	t.Parallel()
	browser := chromium.ForTest(t)
	d := startDemo(t, "-listen", "127.0.0.1:0")
	url := d.seeAfter(0, `Open (http://127\.0\.0\.1:\d+/) in a browser`)[1]
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	p, err := browser.Open(ctx, url)
	if err != nil {
		t.Fatal(err)
	}
	step := func(what string, act func() error, cond string) {
		t.Helper()
		if act != nil {
			if err := act(); err != nil {
				t.Fatalf("%s: %v", what, err)
			}
		}
		wait, stop := context.WithTimeout(ctx, demoWait)
		defer stop()
		if err := p.WaitFor(wait, cond); err != nil {
			shot(t, p, what)
			t.Fatalf("%s: %v\nthe demo's output:\n%s", what, err, d.screen.String())
		}
	}
	has := func(sel, text string) string {
		return `[...document.querySelectorAll(` + jsString(sel) + `)].some((e) => e.textContent.includes(` + jsString(text) + `))`
	}

	step("the page draws both chats", nil, `document.querySelector("#you .title").textContent === "Countersign Demo" && `+
		`document.querySelector("#target .title").textContent === "Alex (222)"`)
	step("a send gets a card", func() error { return p.Type(ctx, "#text", "/send 222 hello from the page") },
		has("#you .msg.mine", "/send 222 hello from the page")+" && "+has("#you .msg.bot .key", "Approve"))
	step("Approve delivers it", func() error { return p.Click(ctx, "#you .msg.bot .key", "Approve") },
		has("#target .msg", "hello from the page")+" && "+has("#you .msg.bot", "Sent op-"))
	step("Edit asks for the new text", func() error {
		if err := p.Type(ctx, "#text", "/send 222 helo"); err != nil {
			return err
		}
		if err := p.WaitFor(ctx, has("#you .msg.bot", "helo")+" && "+has("#you .msg.bot .key", "Edit")); err != nil {
			return err
		}
		return p.Click(ctx, "#you .msg.bot .key", "Edit")
	}, `!document.querySelector("#you .replying").hidden`)
	step("the reply is the new text", func() error { return p.Type(ctx, "#text", "hello, corrected") },
		has("#you .msg.bot", "Text, exactly as it will be sent (16 characters):\nhello, corrected")+" && "+
			has("#you .msg.bot .key", "Reject")+` && document.querySelector("#you .replying").hidden`)
	step("Reject sends nothing", func() error { return p.Click(ctx, "#you .msg.bot .key", "Reject") },
		has("#you .msg.bot", "Rejected by")+` && document.querySelectorAll("#you .key").length === 0 && `+
			`document.querySelectorAll("#target .msg").length === 1`)

	step("the loss is armed", func() error { return p.Click(ctx, "#lose", "") }, `document.querySelector("#armed").textContent.includes("Armed")`)
	step("another card", func() error { return p.Type(ctx, "#text", "/send 222 lost on the way back") },
		`document.querySelectorAll("#you .msg.bot .key").length > 0 && `+has("#you .msg.bot", "lost on the way back"))
	step("its answer is lost", func() error { return p.Click(ctx, "#you .msg.bot .key", "Approve") },
		has("#you .msg.bot", "Outcome unknown for op-")+" && "+has("#you .msg.bot .key", "It did not arrive")+" && "+
			has("#target .msg.lost", "lost on the way back")+" && "+
			has("#envelopes .envelope pre", "status: unknown")+` && document.querySelector("#armed").textContent === ""`)
	var path string
	if err := p.Eval(ctx, `document.querySelector("#envelopes .envelope .path").textContent`, &path); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(path); err != nil || filepath.Base(filepath.Dir(filepath.Dir(filepath.Dir(path)))) != "envelopes" {
		t.Errorf("envelope path %q on the page: %v, want a note in the vault", path, err)
	}
	step("It did not arrive resolves it", func() error { return p.Click(ctx, "#you .msg.bot .key", "It did not arrive") },
		has("#envelopes .envelope pre", "status: not_committed")+" && !"+has("#you .key", "It did not arrive"))
	shot(t, p, "end")

	d.cancel()
	if code := d.exit(); code != 0 {
		t.Errorf("exit %d after the demo's context ended, want 0\n%s", code, d.screen.String())
	}
}

// shot keeps a screenshot of the page in the test's output folder when
// COUNTERSIGN_SCREENSHOTS names one: what a person would have seen.
func shot(t *testing.T, p *chromium.Page, name string) {
	dir := os.Getenv("COUNTERSIGN_SCREENSHOTS")
	if dir == "" {
		return
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	png, err := p.Screenshot(ctx)
	if err != nil {
		t.Logf("screenshot: %v", err)
		return
	}
	os.WriteFile(filepath.Join(dir, t.Name()+"-"+filepath.Base(name)+".png"), png, 0o600)
}

// jsString is s as a JavaScript string literal.
func jsString(s string) string {
	b, _ := json.Marshal(s) // a string always encodes
	return string(b)
}

// The demo's card has a 🔎 Whole payload button: it opens the review page as
// Telegram opens a Mini App, with init data the demo's Telegram signs in the
// address's fragment (#tgWebAppData) and no Telegram script; the page shows
// the payload under the card's hash, and its Approve delivers it.
func TestDemoWholePayloadOpensTheReviewPage(t *testing.T) {
	t.Parallel()
	browser := chromium.ForTest(t)
	d := startDemo(t, "-listen", "127.0.0.1:0")
	base := d.seeAfter(0, `Open (http://127\.0\.0\.1:\d+)/ in a browser`)[1]
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	chat, err := browser.Open(ctx, base+"/")
	if err != nil {
		t.Fatal(err)
	}
	if err := chat.Type(ctx, "#text", "/send 222 seen whole first"); err != nil {
		t.Fatal(err)
	}
	wait, stop := context.WithTimeout(ctx, demoWait)
	defer stop()
	if err := chat.WaitFor(wait, `[...document.querySelectorAll("#you .msg.bot a.key")].some((a) => a.textContent.includes("Whole payload"))`); err != nil {
		t.Fatal(err)
	}
	var href, card string
	if err := chat.Eval(ctx, `[...document.querySelectorAll("#you .msg.bot a.key")].find((a) => a.textContent.includes("Whole payload")).getAttribute("href")`, &href); err != nil {
		t.Fatal(err)
	}
	if err := chat.Eval(ctx, `[...document.querySelectorAll("#you .msg.bot")].map((m) => m.textContent).find((t) => t.includes("Payload: sha256"))`, &card); err != nil {
		t.Fatal(err)
	}
	sha := regexp.MustCompile(`Payload: sha256 ([0-9a-f]{12})`).FindStringSubmatch(card)
	if !strings.HasPrefix(href, "/webapp?to=") || sha == nil {
		t.Fatalf("the card's Whole payload opens %q; card %q", href, card)
	}
	page, err := browser.Open(ctx, base+href)
	if err != nil {
		t.Fatal(err)
	}
	if err := page.WaitFor(wait, `!document.getElementById("decide").hidden`); err != nil {
		t.Fatal(err)
	}
	var shown struct {
		Hash    string `json:"hash"`
		Payload string `json:"payload"`
		Address string `json:"address"`
	}
	if err := page.Eval(ctx, `({hash: document.getElementById("sha256").textContent, payload: document.getElementById("payload").innerText, address: location.href})`, &shown); err != nil {
		t.Fatal(err)
	}
	if !strings.HasPrefix(shown.Hash, sha[1]) || !strings.Contains(shown.Payload, "seen whole first") || !strings.Contains(shown.Address, "#tgWebAppData=") {
		t.Fatalf("the review page shows %+v, want the card's payload under %s, opened with init data", shown, sha[1])
	}
	shot(t, page, "review")
	if err := page.Click(ctx, "#approve", ""); err != nil {
		t.Fatal(err)
	}
	if err := chat.WaitFor(wait, `[...document.querySelectorAll("#target .msg")].some((m) => m.textContent.includes("seen whole first"))`); err != nil {
		t.Fatalf("the approval on the review page delivered nothing: %v", err)
	}
}
