package review_test

import (
	"fmt"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/countersign/countersign/command"
	"github.com/countersign/countersign/journal"
	"github.com/countersign/countersign/policy"
	"github.com/countersign/countersign/review"
	"github.com/countersign/countersign/stepup"
	"github.com/countersign/countersign/telegram/telegramtest"
)

// Nobody but an approver of the request, proven by Telegram's init data or
// by a link made for them, sees a payload or decides it; and a decision is
// taken only on the payload the page showed. Each refusal decides nothing.
func TestTheReviewPageRefusesAllButItsApprovers(t *testing.T) {
	t.Parallel()
	r := newRig(t)
	opID := r.call("commit_send_message", map[string]any{"chat_id": "222", "text": "hello"})
	a := r.approval(opID)
	keys := review.NewKeys(token)
	other := r.approval(r.call("commit_send_message", map[string]any{"chat_id": "222", "text": "another"}))
	signed := func(tok string, user int64, at time.Time) string {
		return review.SignInitData(tok, review.InitUser{ID: user, FirstName: "x"}, at, nil)
	}
	cases := []struct {
		name   string
		body   map[string]any
		status int
		words  string
	}{
		{"no credential", map[string]any{}, http.StatusUnauthorized, "Open this page from the 🔎 Whole payload button"},
		{"init data signed with another bot's token", map[string]any{"init_data": signed("7009999999:AAHdqTcvCH1vGWJxfSeofSAs0K5PALDsaw", alice, time.Now())}, http.StatusForbidden, "does not check"},
		{"init data with another user put in", map[string]any{"init_data": strings.Replace(signed(token, alice, time.Now()), "%22id%22%3A100", "%22id%22%3A200", 1)}, http.StatusForbidden, "does not check"},
		{"init data 31 minutes old", map[string]any{"init_data": signed(token, alice, time.Now().Add(-31*time.Minute))}, http.StatusForbidden, "more than 30 minutes ago"},
		{"a stranger's init data", map[string]any{"init_data": signed(token, mallory, time.Now())}, http.StatusForbidden, "not an approver"},
		{"a link made for another approval", map[string]any{"link": keys.MakeLink(other.ID, a.PayloadSHA256, alice).String()}, http.StatusForbidden, "not made by this bot for this approval"},
		{"a link made for a stranger", map[string]any{"link": keys.MakeLink(a.ID, a.PayloadSHA256, mallory).String()}, http.StatusForbidden, "not an approver"},
		{"a link with its person changed", map[string]any{"link": strings.Replace(keys.MakeLink(a.ID, a.PayloadSHA256, alice).String(), "100.", "200.", 1)}, http.StatusForbidden, "not made by this bot"},
		{"a link made under another token", map[string]any{"link": review.NewKeys("7009999999:AAHdqTcvCH1vGWJxfSeofSAs0K5PALDsaw").MakeLink(a.ID, a.PayloadSHA256, alice).String()}, http.StatusForbidden, "not made by this bot"},
	}
	for _, c := range cases {
		for _, api := range []string{"show", "decide"} {
			body := map[string]any{"approval": a.ID, "sha256": a.PayloadSHA256, "decision": "approve"}
			for k, v := range c.body {
				body[k] = v
			}
			got := r.post(api, body)
			if got.Status != c.status || !strings.Contains(got.Error, c.words) || got.HTML != "" {
				t.Errorf("%s, %s: %d %q, want %d and %q, nothing shown", c.name, api, got.Status, got.Error, c.status, c.words)
			}
		}
	}
	// A decision on another payload than the approval's: refused, even from
	// its approver.
	stale := r.post("decide", map[string]any{"approval": a.ID, "init_data": r.initData(alice), "sha256": other.PayloadSHA256, "decision": "approve"})
	if stale.Status != http.StatusConflict || !strings.Contains(stale.Error, "changed since this page showed it") {
		t.Errorf("a decision on another hash: %d %q, want 409", stale.Status, stale.Error)
	}
	if s := r.state(opID); s != journal.AwaitingApproval {
		t.Fatalf("after the refusals the operation is %s, want it still awaiting approval", s)
	}
	// Each was logged without the credential.
	logs := r.logs.String()
	if n := strings.Count(logs, "review page refused"); n < 2*len(cases)+1 {
		t.Errorf("%d refusals logged, want %d", n, 2*len(cases)+1)
	}
	for _, c := range cases {
		for _, v := range c.body {
			cred := v.(string)
			secrets := []string{cred}
			if q, err := url.ParseQuery(cred); err == nil && q.Get("hash") != "" {
				secrets = append(secrets, q.Get("hash"))
			}
			if u, err := url.Parse(cred); err == nil && u.Fragment != "" {
				secrets = append(secrets, u.Fragment)
			}
			for _, secret := range secrets {
				if strings.Contains(logs, secret) {
					t.Errorf("%s: the log holds the credential %q", c.name, secret)
				}
			}
		}
	}
}

// Approve on the page records the decision and commits through the command
// handler, as a tap does: the message reaches the chat, and the card in
// Telegram is closed with who approved.
func TestApprovingOnThePageSendsAsATapDoes(t *testing.T) {
	t.Parallel()
	r := newRig(t)
	opID := r.call("commit_send_message", map[string]any{"chat_id": "222", "text": "approved from the page"})
	a := r.approval(opID)
	card := r.card(bob, opID)
	shown := r.show(a.ID, bob)
	got := r.post("decide", map[string]any{"approval": a.ID, "init_data": r.initData(bob), "sha256": shown.SHA256, "decision": "approve"})
	if got.Status != http.StatusOK || !strings.Contains(got.Said, "✅ Approved by user200 (200)") || !strings.Contains(got.Said, "Sent "+opID) {
		t.Fatalf("decide = %d %q %q, want the approval and the send", got.Status, got.Said, got.Error)
	}
	r.waitState(opID, journal.Committed)
	if ms := r.srv.Messages(target); len(ms) != 1 || ms[0].Text != "approved from the page" {
		t.Fatalf("the chat holds %+v, want the one message approved", ms)
	}
	r.waitFor("the card closed", func(s *telegramtest.Server) bool {
		m, _ := s.Message(bob, card.MessageID)
		return strings.Contains(m.Text, "✅ Approved by user 200") && !strings.Contains(string(m.ReplyMarkup), "ap1:")
	})
	again := r.post("decide", map[string]any{"approval": a.ID, "init_data": r.initData(alice), "sha256": shown.SHA256, "decision": "approve"})
	if again.Status != http.StatusConflict || !strings.Contains(again.Error, "Already approved") {
		t.Errorf("a second decision: %d %q, want 409 already approved", again.Status, again.Error)
	}
}

// The page's Edit replaces the text through /amend's path: a new approval
// with a new card; and an Approve of the payload as the page showed it before
// is refused and sends nothing.
func TestApprovingAPayloadEditedSinceIsRefused(t *testing.T) {
	t.Parallel()
	r := newRig(t)
	opID := r.call("commit_send_message", map[string]any{"chat_id": "222", "text": "the first words"})
	a := r.approval(opID)
	alicePage, bobPage := r.show(a.ID, alice), r.show(a.ID, bob)
	if !alicePage.Editable || alicePage.Text != "the first words" {
		t.Fatalf("show = %+v, want an editable text", alicePage)
	}
	edit := r.post("decide", map[string]any{"approval": a.ID, "init_data": r.initData(alice), "sha256": alicePage.SHA256, "decision": "edit", "text": "the corrected words"})
	if edit.Status != http.StatusOK || !strings.Contains(edit.Said, "Amended "+opID) {
		t.Fatalf("edit = %d %q %q", edit.Status, edit.Said, edit.Error)
	}
	late := r.post("decide", map[string]any{"approval": a.ID, "init_data": r.initData(bob), "sha256": bobPage.SHA256, "decision": "approve"})
	if late.Status != http.StatusConflict || late.Said != "" {
		t.Fatalf("approve of the payload before the edit = %d %q %q, want 409", late.Status, late.Said, late.Error)
	}
	next := r.approval(opID)
	if next.ID == a.ID || next.Operation.Payload.Text != "the corrected words" {
		t.Fatalf("after the edit the approval is %s (%q)", next.ID, next.Operation.Payload.Text)
	}
	if s := r.state(opID); s != journal.AwaitingApproval || len(r.srv.Messages(target)) != 0 {
		t.Fatalf("state %s, %d sent; want nothing sent", s, len(r.srv.Messages(target)))
	}
	page := r.show(next.ID, bob)
	if page.SHA256 != next.PayloadSHA256 || !strings.Contains(page.HTML, "the corrected words") {
		t.Errorf("the new approval's page: %q %q", page.SHA256, page.Error)
	}
}

// /review gives an approver a link of their own, which opens the page in any
// browser and decides; a stranger gets none, and the link dies with the
// decision.
func TestAReviewLinkOpensForItsApproverUntilDecided(t *testing.T) {
	t.Parallel()
	r := newRig(t, func(p *policy.Policy) { p.Access.Escalation = []policy.UserID{carol} })
	opID := r.call("commit_send_message", map[string]any{"chat_id": "222", "text": "from a browser"})
	a := r.approval(opID)
	ctx := t.Context()
	if rep, err := r.h.Handle(ctx, command.Request{User: mallory, Chat: "999", Line: "/review " + opID}); err == nil && strings.Contains(rep.Text, "#link=") {
		t.Fatalf("a stranger's /review = %q, want no link", rep.Text)
	}
	// An approver of the bot who is not one of this request (an escalation
	// approver, before it is escalated) gets no link, and no page.
	if rep, err := r.h.Handle(ctx, command.Request{User: carol, Chat: "300", Line: "/review " + opID}); err != nil || rep.Text != "You are not an approver of this request." {
		t.Fatalf("an escalation approver's /review = %q, %v; want a refusal", rep.Text, err)
	}
	if got := r.show(a.ID, carol); got.Status != http.StatusForbidden || got.HTML != "" {
		t.Fatalf("an escalation approver's page = %d %q, want 403", got.Status, got.Error)
	}
	rep, err := r.h.Handle(ctx, command.Request{User: bob, Chat: "200", Line: "/review " + opID})
	if err != nil || !strings.Contains(rep.Text, review.PageURL(r.page.URL, a.ID)+"#link=") {
		t.Fatalf("/review = %q, %v; want a link to the page of %s", rep.Text, err, a.ID)
	}
	link := rep.Text[strings.Index(rep.Text, "#link=")+len("#link="):]
	if _, err := url.Parse(rep.Text[strings.Index(rep.Text, "http"):]); err != nil {
		t.Fatal(err)
	}
	shown := r.post("show", map[string]any{"approval": a.ID, "link": link})
	if shown.Status != http.StatusOK || shown.SHA256 != a.PayloadSHA256 {
		t.Fatalf("show by link = %d %q", shown.Status, shown.Error)
	}
	// A link proves only that its holder read the approver's chat: approving
	// from it takes the approver's code.
	secret, err := stepup.NewSecret()
	if err != nil {
		t.Fatal(err)
	}
	if err := r.j.EnrolTOTP(ctx, bob, secret, false); err != nil {
		t.Fatal(err)
	}
	if !shown.Code {
		t.Errorf("the page opened from a link does not ask for the code")
	}
	decide := func(code string) answer {
		return r.post("decide", map[string]any{"approval": a.ID, "link": link, "sha256": shown.SHA256, "decision": "approve", "code": code})
	}
	if got := decide(""); got.Status != http.StatusBadRequest || !strings.Contains(got.Error, "takes the code from your authenticator app") {
		t.Errorf("approve by link without a code = %d %q, want it asked", got.Status, got.Error)
	}
	now, _ := stepup.Code(secret, time.Now())
	wrong := fmt.Sprintf("%06d", (mustAtoi(t, now)+1)%1000000)
	if got := decide(wrong); got.Status != http.StatusOK || got.Done || r.state(opID) != journal.AwaitingApproval {
		t.Errorf("approve by link with a wrong code = %d %+v, state %s; want refused, nothing decided", got.Status, got, r.state(opID))
	}
	got := decide(now)
	if got.Status != http.StatusOK || !got.Done || !strings.Contains(got.Said, "Approved by user 200 (review link)") {
		t.Fatalf("decide by link = %d %q %q", got.Status, got.Said, got.Error)
	}
	r.waitState(opID, journal.Committed)
	if after := r.post("show", map[string]any{"approval": a.ID, "link": link}); after.Status != http.StatusConflict {
		t.Errorf("the link after the decision: %d %q, want 409", after.Status, after.Error)
	}
}

func mustAtoi(t *testing.T, s string) int {
	t.Helper()
	n, err := strconv.Atoi(s)
	if err != nil {
		t.Fatal(err)
	}
	return n
}
