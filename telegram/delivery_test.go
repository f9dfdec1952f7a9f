package telegram_test

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/countersign/countersign/journal"
	"github.com/countersign/countersign/telegram"
	"github.com/countersign/countersign/telegram/telegramtest"
)

// approveSend issues /send from alice and approves the card.
func (r *rig) approveSend(text string) {
	r.t.Helper()
	r.command(alice, "/send 222 "+text)
	r.tap(alice, r.card(alice), "Approve")
}

func sendCalls(s *telegramtest.Server, chat int64) []telegramtest.Call {
	return callsIn(s, "sendMessage", chat)
}

// callsIn are the calls of method in chat, in the order they came.
func callsIn(s *telegramtest.Server, method string, chat int64) []telegramtest.Call {
	var out []telegramtest.Call
	for _, c := range s.CallsTo(method) {
		if c.ChatID == chat {
			out = append(out, c)
		}
	}
	return out
}

func TestTooManyRequestsWaitsRetryAfterThenDeliversOnce(t *testing.T) {
	t.Parallel()
	r := newRig(t)
	r.srv.Inject(telegramtest.TooManyRequests(1).For("sendMessage").InChat(target))
	r.approveSend("after the flood")
	r.waitFor("the delivery", atLeast(1, delivered(target)))
	calls := sendCalls(r.srv, target)
	if len(calls) != 2 || len(r.srv.Messages(target)) != 1 {
		t.Fatalf("attempts = %d, deliveries = %d; want 2 and 1", len(calls), len(r.srv.Messages(target)))
	}
	if gap := calls[1].Time.Sub(calls[0].Time); gap < time.Second {
		t.Errorf("retried after %s, want at least retry_after (1s)", gap)
	}
}

func TestForbiddenStopsAfterOneAttemptWithAReport(t *testing.T) {
	t.Parallel()
	r := newRig(t)
	r.srv.Inject(telegramtest.BotBlocked().For("sendMessage").InChat(target))
	r.approveSend("to a chat that refuses us")
	r.replyContaining(alice, "blocked")
	if n := len(sendCalls(r.srv, target)); n != 1 {
		t.Errorf("attempts = %d, want 1", n)
	}
}

func TestTooManyRequestsForeverStopsAtTheBudget(t *testing.T) {
	t.Parallel()
	r := newRig(t)
	r.srv.Inject(telegramtest.TooManyRequests(1).For("sendMessage").InChat(target).Always())
	r.approveSend("never gets through")
	r.replyContaining(alice, "etry budget spent")
	if n := len(sendCalls(r.srv, target)); n != 1+r.pol.RetryBudget {
		t.Errorf("attempts = %d, want 1 + retry_budget = %d", n, 1+r.pol.RetryBudget)
	}
}

func TestUnknownOutcomesAreNeverResent(t *testing.T) {
	t.Parallel()
	for name, fault := range map[string]telegramtest.Fault{
		"502 after acceptance":              telegramtest.BadGateway().AcceptedThen(),
		"HTML 502 after acceptance":         telegramtest.BadGatewayHTML().AcceptedThen(),
		"connection dropped after accepted": telegramtest.AcceptThenDrop(),
	} {
		t.Run(name, func(t *testing.T) {
			r := newRig(t)
			r.srv.Inject(fault.For("sendMessage").InChat(target))
			r.approveSend("did it arrive?")
			notice := r.notice(alice)
			if n := len(r.srv.Messages(target)); n != 1 || len(sendCalls(r.srv, target)) != 1 {
				t.Fatalf("deliveries = %d after %d attempts, want exactly 1 and 1", n, len(sendCalls(r.srv, target)))
			}
			opID := opIn(t, notice.Text)
			if op := r.operation(opID); op.State != journal.Unknown {
				t.Errorf("state = %s, want unknown", op.State)
			}
			if e, _, err := r.vault.Get(opID); err != nil || !e.Unresolved() {
				t.Errorf("envelope = %+v, %v; want an unresolved one", e, err)
			}
			// Not arrived: the retry delivers once more, under the same operation.
			r.tap(alice, notice, "did not arrive")
			r.waitFor("the resolution", func(*telegramtest.Server) bool { return r.operation(opID).State == journal.NotDelivered })
			if e, _, _ := r.vault.Get(opID); e.Resolution != "not_delivered" {
				t.Errorf("envelope resolution = %q, want not_delivered", e.Resolution)
			}
			r.command(alice, "/retry "+opID)
			r.tap(alice, r.cardFor(alice, opID), "Approve")
			r.waitFor("the retried delivery", atLeast(2, delivered(target)))
			if n := len(r.srv.Messages(target)); n != 2 {
				t.Errorf("deliveries = %d, want the first and the retry", n)
			}
		})
	}
}

func TestArrivedMakesRetryRefuse(t *testing.T) {
	t.Parallel()
	r := newRig(t)
	r.srv.Inject(telegramtest.AcceptThenDrop().For("sendMessage").InChat(target))
	r.approveSend("it did arrive")
	notice := r.notice(alice)
	opID := opIn(t, notice.Text)
	r.tap(alice, notice, "It arrived")
	r.waitFor("the resolution", func(*telegramtest.Server) bool { return r.operation(opID).State == journal.Committed })
	r.command(alice, "/retry "+opID)
	r.replyContaining(alice, "was delivered")
	if n := len(sendCalls(r.srv, target)); n != 1 {
		t.Errorf("attempts = %d, want 1", n)
	}
	// The tap closes its notice once: its own outcome event does not edit it
	// again. Once the edit is seen, the bot stops, which waits for the work
	// its events started.
	noticeEdits := func(s *telegramtest.Server) int {
		n := 0
		for _, c := range callsIn(s, "editMessageText", alice) {
			if c.Params["message_id"] == strconv.Itoa(notice.MessageID) {
				n++
			}
		}
		return n
	}
	r.waitFor("the notice closed", func(s *telegramtest.Server) bool { return noticeEdits(s) > 0 })
	r.shutdown()
	if n := noticeEdits(r.srv); n != 1 {
		t.Errorf("the notice was edited %d times, want once", n)
	}
}

func TestLongTextArrivesInPartsAndNoPartTwice(t *testing.T) {
	t.Parallel()
	r := newRig(t)
	var b strings.Builder
	for i := 0; b.Len() < 9000; i++ {
		fmt.Fprintf(&b, "Paragraph %d of the weekly report, with enough words to fill it.\n\n", i)
	}
	text := b.String()[:9000]
	// Part 2 is refused once with a 429: nothing happened, so only part 2 goes again.
	r.srv.Inject(telegramtest.TooManyRequests(1).For("sendMessage").InChat(target).OnCall(2))
	r.approveSend(text)
	r.waitFor("three parts", atLeast(3, delivered(target)))
	got := r.srv.Messages(target)
	var joined strings.Builder
	for _, m := range got {
		if n := len([]rune(m.RawText)); n > 4096 {
			t.Errorf("part of %d characters", n)
		}
		joined.WriteString(m.RawText)
	}
	if len(got) != 3 || joined.String() != text {
		t.Errorf("%d parts whose concatenation equals the text: %v; want 3, true", len(got), joined.String() == text)
	}
	calls := sendCalls(r.srv, target)
	if len(calls) != 4 || calls[1].Status != 429 || calls[1].Params["text"] != calls[2].Params["text"] || calls[0].Params["text"] == calls[2].Params["text"] {
		t.Errorf("attempts = %d, want 4: part 1, part 2 refused, part 2 again, part 3", len(calls))
		for _, c := range calls {
			t.Logf("  %d %q…", c.Status, c.Params["text"][:20])
		}
	}
}

func TestTokenNeverLeaks(t *testing.T) {
	t.Parallel()
	r := newRig(t)
	r.srv.Inject(telegramtest.AcceptThenDrop().For("sendMessage").InChat(target))
	r.approveSend("a send that fails after acceptance, so errors get written everywhere")
	r.notice(alice)
	r.command(alice, "/send 222 bot token "+token+" pasted by mistake")
	r.replyContaining(alice, "looks like a secret")
	r.shutdown()
	noTokenLeft(t, r) // nor echoed in any reply
}

func TestRejectedTokenAndSecondPollerEndTheBot(t *testing.T) {
	t.Parallel()
	srv := telegramtest.NewServer(t, telegramtest.Options{Token: token})
	j, err := journal.Open(context.Background(), filepath.Join(t.TempDir(), "journal.db"))
	if err != nil {
		t.Fatal(err)
	}
	defer j.Close()
	_, err = telegram.New(context.Background(), j, telegram.Options{Token: "1:WRONGWRONGWRONGWRONGWRONGWRONGWRONGWR", APIURL: srv.URL()})
	if !errors.Is(err, telegram.ErrTokenRejected) {
		t.Errorf("wrong token: %v, want ErrTokenRejected", err)
	}
	// A second process polling with the same token: Telegram ends the older
	// poll with 409, and the bot that got it stops, saying why.
	r := newRig(t)
	r.waitFor("the first poller", func(s *telegramtest.Server) bool { return s.Polling() })
	newRigOn(t, r.srv)
	select {
	case err := <-r.done:
		if !errors.Is(err, telegram.ErrConflict) {
			t.Errorf("the first poller ended with %v, want ErrConflict", err)
		}
		r.stop = nil
	case <-time.After(10 * time.Second):
		t.Error("the first poller did not stop when a second began")
	}
}

func TestShutdownLetsASendInFlightFinish(t *testing.T) {
	t.Parallel()
	r := newRig(t)
	r.srv.Inject(telegramtest.Delay(700 * time.Millisecond).For("sendMessage").InChat(target))
	r.approveSend("slow but sure")
	r.waitFor("the send in flight", func(s *telegramtest.Server) bool { return len(sendCalls(s, target)) == 1 })
	r.shutdown() // SIGTERM while Telegram is still answering
	if n := len(r.srv.Messages(target)); n != 1 {
		t.Fatalf("deliveries = %d, want 1", n)
	}
	j, err := journal.Open(context.Background(), filepath.Join(r.dir, "journal.db"))
	if err != nil {
		t.Fatal(err)
	}
	defer j.Close()
	if err := j.Own(context.Background(), telegram.Transport); err != nil { // the next start
		t.Fatal(err)
	}
	ops, _ := j.Operations(context.Background(), journal.Filter{States: []journal.State{journal.Committed}})
	if len(ops) != 1 || len(j.Recovered()) != 0 {
		t.Errorf("committed = %d, recovered = %v; want the send known delivered, nothing left unknown", len(ops), j.Recovered())
	}
}

// Part 2 of a long text meets an unknown outcome; the person is asked about part
// 2, verifies it did not arrive and retries: the retry resumes at part 2, so part 1, known delivered, is
// not sent again, and the text arrives whole, each part once.
func TestAResolvedLongTextResumesAtTheFirstPartNotDelivered(t *testing.T) {
	t.Parallel()
	r := newRig(t)
	var b strings.Builder
	for i := 0; b.Len() < 9000; i++ {
		fmt.Fprintf(&b, "Paragraph %d of the weekly report, with enough words to fill it.\n\n", i)
	}
	text := b.String()[:9000]
	r.srv.Inject(telegramtest.DropBeforeAccept().For("sendMessage").InChat(target).OnCall(2))
	r.approveSend(text)
	notice := r.notice(alice)
	opID := opIn(t, notice.Text)
	if op := r.operation(opID); op.State != journal.Unknown || op.PartsDone != 1 {
		t.Fatalf("after part 2 was lost: %s with %d parts done, want unknown with 1", op.State, op.PartsDone)
	}
	// The person is told which part to look for: the first not known delivered.
	if !strings.Contains(notice.Text, "parts 1-1 of 3 were delivered") || !strings.Contains(notice.Text, "look for part 2 in chat 222") {
		t.Errorf("the notice does not name part 2 as the one to verify:\n%s", notice.Text)
	}
	r.tap(alice, notice, "did not arrive")
	r.waitFor("the resolution", func(*telegramtest.Server) bool { return r.operation(opID).State == journal.NotDelivered })
	r.command(alice, "/retry "+opID)
	r.tap(alice, r.cardFor(alice, opID), "Approve")
	r.waitFor("the rest of the text", atLeast(3, delivered(target)))
	r.shutdown()
	got := r.srv.Messages(target)
	var joined strings.Builder
	for _, m := range got {
		joined.WriteString(m.RawText)
	}
	if len(got) != 3 || joined.String() != text {
		t.Errorf("%d messages delivered, whole text %v; want 3 parts making the text", len(got), joined.String() == text)
	}
	calls := sendCalls(r.srv, target)
	if len(calls) != 4 || calls[0].Params["text"] == calls[2].Params["text"] || calls[1].Params["text"] != calls[2].Params["text"] {
		t.Errorf("attempts = %d, want 4: part 1, part 2 lost, part 2 again, part 3", len(calls))
	}
}

// A proxy in front of the Bot API answers with an error page that echoes the
// request's path, and so the token: the outcome is unknown, and the token is
// scrubbed from the error before it reaches the journal, the vault, a log line or
// a reply.
func TestAProxyPageThatEchoesTheTokenLeavesItNowhere(t *testing.T) {
	t.Parallel()
	r := newRig(t)
	page := "<html><body><h1>502 Bad Gateway</h1><p>The proxy could not complete POST /bot" + token + "/sendMessage</p></body></html>"
	r.srv.Inject(telegramtest.Fault{Action: telegramtest.ActionAcceptThenReply, Code: http.StatusBadGateway, Body: page}.For("sendMessage").InChat(target))
	r.approveSend("through a chatty proxy")
	opID := opIn(t, r.notice(alice).Text)
	if op := r.operation(opID); op.State != journal.Unknown {
		t.Errorf("state = %s, want unknown", op.State)
	}
	r.shutdown()
	noTokenLeft(t, r)
}
