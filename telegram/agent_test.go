package telegram_test

import (
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"slices"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/countersign/countersign/agent/agenttest"
	"github.com/countersign/countersign/journal"
	"github.com/countersign/countersign/policy"
	"github.com/countersign/countersign/telegram/telegramtest"
)

// modelServer answers every Messages API request with a commit_send_message call.
func modelServer(t *testing.T, chatID, text string) *agenttest.Server {
	return agenttest.NewServer(t, agenttest.Message("tool_use", "Sending it to the team.", agenttest.Send(chatID, text)))
}

// A model's turn that asks to send is answered with its words, then the card:
// the card, shown from the operator's event during the turn, waits for the
// reply to the message that asked.
func TestPlainTextBecomesACardAndOneDelivery(t *testing.T) {
	t.Parallel()
	model := modelServer(t, "222", "Standup moves to 10:30")
	r := newRig(t, withModel(model.URL))
	r.command(alice, "tell the team in 222 that standup moves to 10:30")
	reply := r.replyContaining(alice, "Sending it to the team.")
	card := r.card(alice)
	if !strings.Contains(card.Text, "Standup moves to 10:30") {
		t.Fatalf("card = %q, want the model's exact text", card.Text)
	}
	if reply.MessageID > card.MessageID {
		t.Errorf("the card (message %d) came before the reply (message %d)", card.MessageID, reply.MessageID)
	}
	typing := false
	for _, c := range r.srv.CallsTo("sendChatAction") {
		typing = typing || (c.ChatID == alice && c.Params["action"] == "typing" && c.Status == 200)
	}
	if !typing {
		t.Error("no typing action while the model worked")
	}
	r.tap(alice, card, "Approve")
	r.waitFor("the delivery", atLeast(1, delivered(target)))
	if got := r.srv.Messages(target); len(got) != 1 || got[0].RawText != "Standup moves to 10:30" {
		t.Errorf("deliveries = %+v, want the text once", got)
	}
	if n := len(model.Requests()); n != 1 {
		t.Errorf("model requests = %d, want 1: the turn ends while the commit waits", n)
	}
}

// A turn goes on after a commit asks for approval (here a second call reads a
// photo from a slow address): the first card waits for the turn's reply in the
// chat that asked, and comes after it, though its event came long before.
func TestACardWaitsForTheReplyToTheTurnThatAskedForIt(t *testing.T) {
	t.Parallel()
	photo := telegramtest.PNG(t, 10, 10, 7)
	var fetched atomic.Bool
	slow := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		time.Sleep(500 * time.Millisecond) // the turn runs on, past the first card's event
		fetched.Store(true)
		_, _ = w.Write(photo)
	}))
	t.Cleanup(slow.Close)
	in, _ := json.Marshal(map[string]string{"chat_id": "222", "file": slow.URL + "/chart.png"})
	model := agenttest.NewServer(t, agenttest.Message("tool_use", "Sending the text and the chart.",
		agenttest.Send("222", "The chart follows"), agenttest.Call("commit_send_photo", string(in))))
	r := newRig(t, withModel(model.URL), withFiles())
	r.command(alice, "send the chart to 222")
	reply := r.replyContaining(alice, "Sending the text and the chart.")
	if !fetched.Load() {
		t.Fatal("the reply came before the turn's second call ended")
	}
	var first telegramtest.Message
	r.waitFor("the text's card", func(s *telegramtest.Server) bool {
		for _, m := range s.Messages(alice) {
			if strings.Contains(m.Text, "The chart follows") && strings.Contains(m.Text, "Approval needed") {
				first = m
				return true
			}
		}
		return false
	})
	if first.MessageID < reply.MessageID {
		t.Errorf("the text's card (message %d) came before the turn's reply (message %d)", first.MessageID, reply.MessageID)
	}
}

// A turn that asks for several sends gets their cards in the order it asked,
// though each card is shown from an event of its own.
func TestATurnsCardsComeInTheOrderItAsked(t *testing.T) {
	t.Parallel()
	words := []string{"first", "second", "third", "fourth"}
	var uses []agenttest.Use
	for _, w := range words {
		uses = append(uses, agenttest.Send("222", "The "+w+" of four"))
	}
	model := agenttest.NewServer(t, agenttest.Message("tool_use", "Sending four.", uses...))
	r := newRig(t, withModel(model.URL))
	r.command(alice, "send four notes to 222")
	var order []string
	r.waitFor("the four cards", func(s *telegramtest.Server) bool {
		order = order[:0]
		for _, m := range s.Messages(alice) {
			for _, w := range words {
				if strings.Contains(m.Text, "Approval needed") && strings.Contains(m.Text, "The "+w+" of four") {
					order = append(order, w)
				}
			}
		}
		return len(order) == len(words)
	})
	if !slices.Equal(order, words) {
		t.Errorf("cards in the order %v, want %v", order, words)
	}
}

func TestAStrangersPlainTextNeverReachesTheModel(t *testing.T) {
	t.Parallel()
	model := modelServer(t, "222", "anything")
	r := newRig(t, withModel(model.URL))
	r.command(mallory, "send something to 222")
	r.replyContaining(mallory, "only answers its operators")
	r.waitFor("the refusal to be the only reply", func(s *telegramtest.Server) bool { return len(s.Messages(mallory)) == 1 })
	if n := len(model.Requests()); n != 0 {
		t.Errorf("model requests = %d, want none", n)
	}
	if n := len(r.srv.Messages(alice)); n != 0 {
		t.Errorf("%d messages to the approver, want no card", n)
	}
}

func TestAModelsAutoApprovedSendWithAnUnknownOutcomeOffersToResolveIt(t *testing.T) {
	t.Parallel()
	model := modelServer(t, "222", "Deploy finished")
	r := newRig(t, withModel(model.URL), withPolicy(func(p *policy.Policy) {
		p.AutoApprove = []policy.AutoApprove{{Tool: "commit_send_message", Chats: []string{"222"}}}
	}))
	r.srv.Inject(telegramtest.AcceptThenDrop().For("sendMessage").InChat(target))
	r.command(alice, "tell 222 the deploy finished")
	notice := r.notice(alice)
	opID := opIn(t, notice.Text)
	if !strings.Contains(notice.Text, "Sending it to the team.") {
		t.Errorf("notice = %q, want the model's words with the buttons", notice.Text)
	}
	if n, calls := len(r.srv.Messages(target)), len(sendCalls(r.srv, target)); n != 1 || calls != 1 {
		t.Errorf("deliveries = %d after %d attempts, want 1 and 1: an unknown outcome is never resent", n, calls)
	}
	if n := len(model.Requests()); n != 1 {
		t.Errorf("model requests = %d, want 1: the turn stops at an unknown outcome", n)
	}
	r.tap(alice, notice, "It arrived")
	r.waitFor("the resolution", func(*telegramtest.Server) bool { return r.operation(opID).State == journal.Committed })
}

// /stop ends the model's running turn in the chat, which says so; nothing is
// sent and no card appears.
func TestStopEndsTheModelsTurn(t *testing.T) {
	t.Parallel()
	model := agenttest.NewServer(t, agenttest.Message("end_turn", "too late").HangFor(time.Minute))
	r := newRig(t, withModel(model.URL))
	r.command(alice, "write a very long report")
	r.waitFor("the model request", func(*telegramtest.Server) bool { return len(model.Requests()) == 1 })
	r.command(alice, "/stop")
	r.replyContaining(alice, "Stopped, as you asked")
	r.command(alice, "/stop")
	r.replyContaining(alice, "Nothing is running in this chat.")
	r.shutdown()
	for _, m := range r.srv.Messages(alice) {
		if strings.Contains(m.Text, "too late") || strings.Contains(m.Text, "Approval needed") {
			t.Errorf("after /stop the chat got %q", m.Text)
		}
	}
	if n := len(model.Requests()); n != 1 {
		t.Errorf("model requests = %d, want the one /stop abandoned", n)
	}
}

// A model asks to send a text longer than one message with a parse mode: it is
// refused at prepare time (a split could cut an entity in two), the model is told
// how to fix it, and nothing is shown to an approver or sent.
func TestALongTextWithAParseModeIsRefusedBeforeAnyCard(t *testing.T) {
	t.Parallel()
	var b strings.Builder
	for i := 0; b.Len() < 5000; i++ {
		fmt.Fprintf(&b, "<b>Item %d</b> of the long weekly report, in bold where it matters.\n\n", i)
	}
	in, _ := json.Marshal(map[string]string{"chat_id": "222", "text": b.String(), "parse_mode": "HTML"})
	model := agenttest.NewServer(t, agenttest.Message("tool_use", "Sending the report.", agenttest.Call("commit_send_message", string(in))))
	r := newRig(t, withModel(model.URL))
	r.command(alice, "send the weekly report to 222, in bold")
	r.waitFor("the refusal handed back to the model", func(*telegramtest.Server) bool {
		reqs := model.Requests()
		return len(reqs) >= 2 && strings.Contains(string(reqs[1].Body), "drop parse_mode or shorten it")
	})
	r.shutdown()
	for _, chat := range []int64{alice, bob} {
		if n := len(cardsIn(r.srv, chat)); n != 0 {
			t.Errorf("%d cards in chat %d for a text that cannot be split safely", n, chat)
		}
	}
	if n := len(r.srv.Messages(target)); n != 0 {
		t.Errorf("deliveries = %d, want none", n)
	}
}
