package telegram_test

import (
	"encoding/json"
	"fmt"
	"strings"
	"testing"

	"github.com/countersign/countersign/action"
	"github.com/countersign/countersign/journal"
	"github.com/countersign/countersign/operator"
	"github.com/countersign/countersign/telegram/telegramtest"
)

// cards counts the approval cards in chat.
func cards(s *telegramtest.Server, chat int64) int {
	n := 0
	for _, m := range s.Messages(chat) {
		if strings.Contains(m.Text, "Approval needed") {
			n++
		}
	}
	return n
}

// A request rejected by a tap, asked again unchanged from the same chat, is
// refused with the rejection named and no card; asked with what changed, it
// gets a card that shows the change.
func TestARejectedRequestAskedAgainFromTheChat(t *testing.T) {
	t.Parallel()
	r := newRig(t)
	r.command(alice, "/send 222 The launch is on Monday.")
	card := r.card(bob)
	r.tap(bob, card, "Reject")
	r.replyContaining(alice, "Rejected by")
	before := cards(r.srv, bob)

	r.command(alice, "/send 222 The launch is on Monday.")
	r.replyContaining(alice, "a person rejected this same request as operation")
	if n := cards(r.srv, bob); n != before {
		t.Errorf("cards in the approver's chat = %d, want %d: none for the request asked again", n, before)
	}

	remote := r.remote() // an agent's process on the same data folder, its task from alice's chat
	task, err := remote.StartTask(r.t.Context(), journal.Task{Requester: alice, Chat: fmt.Sprint(alice), Summary: "chat", Surface: "telegram"})
	if err != nil {
		t.Fatal(err)
	}
	args, _ := json.Marshal(map[string]string{"chat_id": "222", "text": "The launch is on Monday.", "changed": "the person asked to post it after all"})
	res, err := remote.Call(r.t.Context(), task.ID, operator.Call{Tool: "commit_send_message", Args: args})
	if err != nil || res.Status != action.StatusPending {
		t.Fatalf("asked again with what changed = %+v, %v; want a card", res, err)
	}
	if c := r.cardFor(bob, res.OperationID); !strings.Contains(c.Text, "What changed, as the request says: the person asked to post it after all") {
		t.Errorf("card lacks what changed:\n%s", c.Text)
	}
	if n := len(r.srv.Messages(target)); n != 0 {
		t.Errorf("sent %d, want none before a tap", n)
	}
}
