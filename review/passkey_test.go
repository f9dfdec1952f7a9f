package review_test

import (
	"bytes"
	"context"
	"crypto/ed25519"
	"encoding/json"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/countersign/countersign/action"
	"github.com/countersign/countersign/audit"
	"github.com/countersign/countersign/internal/chromium"
	"github.com/countersign/countersign/internal/rigtest"
	"github.com/countersign/countersign/journal"
	"github.com/countersign/countersign/operator"
	"github.com/countersign/countersign/passkey"
	"github.com/countersign/countersign/policy"
	"github.com/countersign/countersign/review"
)

// withPasskey asks each approver of commit_send_message a passkey.
func withPasskey(p *policy.Policy) {
	t := p.Tools["commit_send_message"]
	t.StepUp = policy.FactorPasskey
	p.Tools["commit_send_message"] = t
}

// passkeyRig is a rig whose review page serves passkeys at
// http://localhost:PORT: a secure origin to the browser, and a host name,
// as an RP ID must be.
func passkeyRig(t *testing.T) (*rig, string) {
	t.Helper()
	r := newRig(t, withPasskey)
	base := strings.Replace(r.page.URL, "127.0.0.1", "localhost", 1)
	rp, err := passkey.NewRP(base)
	if err != nil {
		t.Fatal(err)
	}
	r.h.Reviewer = review.Linker{Keys: review.NewKeys(token), Base: base}
	r.review = review.New(review.Options{Handler: r.h, Token: token, Audience: r.bot.Audience, Passkeys: rp,
		Now: func() time.Time { return r.now() }})
	return r, base
}

// TestAPasskeyEnrolledAndUsedOnTheReviewPage: an approver enrols from a
// one-time link in headless Chromium with a DevTools virtual authenticator,
// opens a passkey approval's /review link in that browser and approves
// payload A with the passkey: it is sent once, and an audit export of the
// journal verifies offline with only the public keys it carries, the receipt
// included. The link enrols once; a second approval's payload B takes a new
// assertion (A's again is refused as replayed).
func TestAPasskeyEnrolledAndUsedOnTheReviewPage(t *testing.T) {
	browser := chromium.ForTest(t)
	r, base := passkeyRig(t)
	ctx, cancel := context.WithTimeout(context.Background(), 90*time.Second)
	defer cancel()

	if err := r.j.NewPasskeyLink(ctx, alice, "one-time-token", time.Now().Add(30*time.Minute)); err != nil {
		t.Fatal(err)
	}
	page, err := browser.Open(ctx, review.EnrolURL(base, "one-time-token"))
	if err != nil {
		t.Fatal(err)
	}
	device, err := page.AddAuthenticator(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if err := page.Click(ctx, "#enrol", ""); err != nil {
		t.Fatal(err)
	}
	if err := page.WaitFor(ctx, `document.body.dataset.enrolled === "yes"`); err != nil {
		t.Fatal(err)
	}
	creds, err := r.j.Passkeys(ctx, alice)
	if err != nil || len(creds) != 1 {
		t.Fatalf("alice's passkeys: %+v, %v; want one", creds, err)
	}
	var said string
	page.Eval(ctx, `document.getElementById("status").textContent`, &said)
	if !strings.Contains(said, creds[0].Key().Fingerprint()) {
		t.Errorf("the enrolment page says %q; want the key's fingerprint", said)
	}
	// The link again, in a tab of its own: dead.
	again, err := browser.Open(ctx, review.EnrolURL(base, "one-time-token"))
	if err != nil {
		t.Fatal(err)
	}
	if err := again.Click(ctx, "#enrol", ""); err != nil {
		t.Fatal(err)
	}
	if err := again.WaitFor(ctx, `document.getElementById("status").textContent.includes("used already")`); err != nil {
		t.Error(err)
	}

	opID := r.call("commit_send_message", map[string]any{"chat_id": "222", "text": "payload A"})
	a := r.approval(opID)
	if a.StepUp != policy.FactorPasskey {
		t.Fatalf("the approval asks %q, want a passkey", a.StepUp)
	}
	approveIn := func(a journal.Approval) {
		t.Helper()
		link := r.h.Reviewer.ReviewLink(a.ID, a.PayloadSHA256, alice)
		if err := page.Navigate(ctx, link); err != nil {
			t.Fatal(err)
		}
		if err := page.WaitFor(ctx, `document.getElementById("approve").textContent.includes("passkey") && location.pathname.endsWith("`+a.ID+`")`); err != nil {
			t.Fatal(err)
		}
		if err := page.Click(ctx, "#approve", "passkey"); err != nil {
			t.Fatal(err)
		}
		if err := page.WaitFor(ctx, `document.body.dataset.decided === "approve" || document.getElementById("status").className === "refused"`); err != nil {
			t.Fatal(err)
		}
	}
	approveIn(a.Approval)
	r.waitState(opID, journal.Committed)
	if sent := r.srv.Messages(target); len(sent) == 0 || !strings.Contains(sent[len(sent)-1].Text, "payload A") {
		t.Errorf("chat %d holds %v; want payload A sent", target, sent)
	}
	got, _ := r.j.Approval(ctx, a.ID)
	if len(got.Votes) != 1 || got.Votes[0].StepUp != policy.FactorPasskey || got.Votes[0].By != alice {
		t.Errorf("votes %+v; want alice's, given with a passkey", got.Votes)
	}

	// The export, checked offline with its own keys alone.
	exportKey := ed25519.NewKeyFromSeed(bytes.Repeat([]byte{3}, 32))
	var b bytes.Buffer
	w := audit.NewWriter(&b, exportKey)
	if err := r.j.AuditRecords(ctx, 1, w.Add); err != nil {
		t.Fatal(err)
	}
	keys := []audit.PasskeyKey{}
	creds, _ = r.j.Passkeys(ctx, 0)
	for _, c := range creds {
		keys = append(keys, c.Key())
	}
	w.Keys(keys)
	w.Close()
	rep, err := audit.Check(&b, exportKey.Public().(ed25519.PublicKey))
	if err != nil || rep.Fault != nil || rep.Receipts != 1 {
		t.Fatalf("the export: %v, %v, %d receipts; want it verified with 1 receipt", err, rep.Fault, rep.Receipts)
	}

	// Payload B: the device signs again; its counter moved on.
	before, _ := device.Credentials(ctx)
	opB := r.call("commit_send_message", map[string]any{"chat_id": "222", "text": "payload B"})
	approveIn(r.approval(opB).Approval)
	r.waitState(opB, journal.Committed)
	after, _ := device.Credentials(ctx)
	if len(before) != 1 || len(after) != 1 || after[0].SignCount <= before[0].SignCount {
		t.Errorf("the device's counter %v then %v; want it moved on", before, after)
	}
}

// TestThePasskeyIsNotAskedInsideTelegram: in the Mini App (init data) the
// page is told to open the browser, and a ceremony asked from there is
// refused, as is one from an approver with no passkey.
func TestThePasskeyIsNotAskedInsideTelegram(t *testing.T) {
	t.Parallel()
	r, _ := passkeyRig(t)
	a := r.approval(r.call("commit_send_message", map[string]any{"chat_id": "222", "text": "hello"}))
	if got := r.post("show", map[string]any{"approval": a.ID, "init_data": r.initData(alice)}); got.Status != http.StatusOK {
		t.Fatalf("show: %+v", got)
	}
	inApp := r.post("passkey/begin", map[string]any{"approval": a.ID, "init_data": r.initData(alice), "sha256": a.PayloadSHA256})
	if inApp.Status != http.StatusForbidden || !strings.Contains(inApp.Error, "Passkeys do not work inside Telegram") {
		t.Errorf("a ceremony from the Mini App: %+v; want refused, saying so", inApp)
	}
	link := review.NewKeys(token).MakeLink(a.ID, a.PayloadSHA256, alice).String()
	none := r.post("passkey/begin", map[string]any{"approval": a.ID, "link": link, "sha256": a.PayloadSHA256})
	if none.Status != http.StatusConflict || !strings.Contains(none.Error, "no passkey enrolled") {
		t.Errorf("an approver without a passkey: %+v; want refused, saying how to enrol", none)
	}
	browser := r.post("passkey/browser", map[string]any{"approval": a.ID, "init_data": r.initData(alice)})
	if browser.Status != http.StatusOK {
		t.Errorf("the browser's link from the Mini App: %+v; want one", browser)
	}
}

// TestThePageAsksThePasskeyThePolicyAsksNow: an approval asked by a process
// whose policy asked no factor (an agent's, beside the bot), opened on the
// page of the bot whose policy asks a passkey, is shown asking the passkey
// (the page then approves with one), from the Mini App and from a link,
// where no TOTP code is asked in its stead; Approve in the Mini App records
// nothing and answers with the passkey's prompt. The passkey's prompt on the
// phone leads here: a page that asked no passkey would leave the approver
// no way to approve.
func TestThePageAsksThePasskeyThePolicyAsksNow(t *testing.T) {
	t.Parallel()
	r, _ := passkeyRig(t)
	ctx := t.Context()
	p, err := policy.Load("../policies.yaml")
	if err != nil {
		t.Fatal(err)
	}
	p.Access = policy.Access{Operators: []policy.UserID{alice}, Approvers: []policy.UserID{alice, bob}}
	agent := rigtest.New(t, rigtest.Over(r.j), rigtest.Policy(p), rigtest.Sender(r.bot.Sender())).Operator
	task, err := agent.StartTask(ctx, journal.Task{Surface: "mcp", Summary: "asked under no step_up"})
	if err != nil {
		t.Fatal(err)
	}
	res, err := agent.Call(ctx, task.ID, operator.Call{Tool: "commit_send_message", Args: json.RawMessage(`{"chat_id":"222","text":"hello"}`)})
	if err != nil || res.Status != action.StatusPending {
		t.Fatalf("the agent's call = %+v, %v; want pending", res, err)
	}
	a := r.approval(res.OperationID)
	if a.StepUp != policy.NoFactor || a.Factor != policy.FactorPasskey {
		t.Fatalf("approval asks %q, the bot %q; want none, and a passkey", a.StepUp, a.Factor)
	}
	link := review.NewKeys(token).MakeLink(a.ID, a.PayloadSHA256, alice).String()
	for _, by := range []map[string]any{{"init_data": r.initData(alice)}, {"link": link}} {
		by["approval"] = a.ID
		got := r.post("show", by)
		if got.Status != http.StatusOK || got.StepUp != string(policy.FactorPasskey) || got.Code || !strings.Contains(got.HTML, "passkey") {
			t.Errorf("show %v = %d, step_up %q, code %v; want the passkey asked, no code", by, got.Status, got.StepUp, got.Code)
		}
	}
	tap := r.post("decide", map[string]any{"approval": a.ID, "init_data": r.initData(alice), "sha256": a.PayloadSHA256, "decision": "approve"})
	if tap.Status != http.StatusOK || tap.Done || !strings.Contains(tap.Said, "asks your passkey") {
		t.Errorf("Approve in the Mini App = %+v; want nothing decided, the passkey asked", tap)
	}
	if got, _ := r.j.Approval(ctx, a.ID); got.Decision != journal.Pending || len(got.Votes) != 0 {
		t.Errorf("after Approve: %+v, want nothing recorded", got)
	}
}
