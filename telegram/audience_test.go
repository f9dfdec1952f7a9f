package telegram_test

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"testing"

	"github.com/countersign/countersign/action"
	"github.com/countersign/countersign/journal"
	"github.com/countersign/countersign/operator"
	"github.com/countersign/countersign/telegram/telegramtest"
)

// What the approver saw still holds when it leaves: the chat a card names (its
// name and type, read with getChat when the payload was made, and bound to its
// hash) is read again right before the write. Renamed or of another kind
// since, nothing is sent: the operation goes approved -> awaiting_approval, a
// new card says what changed, the approval given binds nothing any more, and a
// tap on the new card sends to the chat as it is now.
func TestAChatChangedSinceTheCardIsAskedAgain(t *testing.T) {
	t.Parallel()
	for _, c := range []struct {
		name   string
		chat   telegramtest.Chat
		now    telegramtest.Chat
		shown  string // how the first card names the chat
		change string // what the second card says changed
	}{
		{"renamed", telegramtest.Chat{ID: -4001, Type: "group", Title: "Team"}, telegramtest.Chat{ID: -4001, Type: "group", Title: "Team and guests"},
			`("Team", a group)`, `chat -4001 was renamed since it was approved: it was "Team", a group, it is now "Team and guests", a group`},
		{"of another kind", telegramtest.Chat{ID: -4002, Type: "group", Title: "Desk"}, telegramtest.Chat{ID: -4002, Type: "channel", Title: "Desk"},
			`("Desk", a group)`, `chat -4002 is of another kind since it was approved: it was "Desk", a group, it is now "Desk", a channel`},
	} {
		t.Run(c.name, func(t *testing.T) {
			t.Parallel()
			r := newRig(t)
			r.srv.AddChat(c.chat)
			r.command(alice, "/send "+itoa(c.chat.ID)+" the weekly numbers")
			first := r.card(alice)
			if !strings.Contains(first.Text, c.shown) {
				t.Fatalf("card = %q, want it to name the chat %s", first.Text, c.shown)
			}
			opID := opIn(t, first.Text[strings.Index(first.Text, "Operation: "):])
			was := r.operation(opID)
			if was.Payload.Audience == nil || was.Payload.Audience.Name != c.chat.Title || was.Payload.Audience.Type != c.chat.Type {
				t.Fatalf("payload's audience = %+v, want the chat as getChat read it", was.Payload.Audience)
			}
			given, err := r.j.LatestApproval(context.Background(), opID)
			if err != nil {
				t.Fatal(err)
			}

			r.srv.AddChat(c.now)
			r.tap(alice, first, "Approve")
			r.replyContaining(alice, "Asked again: approved before, but "+c.change)
			if n := len(r.srv.Messages(c.chat.ID)); n != 0 {
				t.Errorf("messages in the chat = %d, want none before the new approval", n)
			}
			ts, err := r.j.Transitions(context.Background(), opID)
			if err != nil {
				t.Fatal(err)
			}
			last := ts[len(ts)-1]
			if last.From != journal.Approved || last.To != journal.AwaitingApproval || !strings.HasPrefix(last.Reason, operator.ReasonRequoted) || !strings.Contains(last.Reason, c.change) {
				t.Errorf("last move = %+v, want approved -> awaiting_approval, %q, saying %q", last, operator.ReasonRequoted, c.change)
			}
			now := r.operation(opID)
			if now.Attempts != 0 || now.PayloadSHA256 == was.PayloadSHA256 || now.Payload.Audience == nil || *now.Payload.Audience != audienceOf(c.now) {
				t.Errorf("payload asked again = %+v (%d attempts), want the chat as it is now under a new hash, nothing tried", now.Payload, now.Attempts)
			}
			if d, err := r.op.Record(context.Background(), given.ID, alice, true); !errors.Is(err, operator.ErrDecided) {
				t.Errorf("the approval given, tapped again = %+v, %v; want refused as decided", d, err)
			}

			r.tap(alice, r.cardFor(alice, opID), "Approve")
			r.committed(opID)
			if n := len(r.srv.Messages(c.chat.ID)); n != 1 {
				t.Errorf("messages in the chat = %d, want the one approved again", n)
			}
		})
	}
}

// The bot's right to post is read again right before the write: a group that
// restricted the bot, or a channel that took its right to post, since the card
// gets nothing sent, and the call ends failed with what to repair (approving
// again cannot give the right back); the path is approved -> failed, no attempt.
// A chat as it was when the card showed it gets the send.
func TestTheRightToPostIsReadAgain(t *testing.T) {
	t.Parallel()
	for _, c := range []struct {
		name   string
		chat   telegramtest.Chat
		member *telegramtest.BotMember
		status string
	}{
		{"unchanged", telegramtest.Chat{ID: -4101, Type: "group", Title: "Ops"}, nil, ""},
		{"restricted in a group", telegramtest.Chat{ID: -4102, Type: "supergroup", Title: "Ops"},
			&telegramtest.BotMember{Status: "restricted"}, "restricted from sending messages"},
		{"no right to post in a channel", telegramtest.Chat{ID: -1004103, Type: "channel", Title: "News"},
			&telegramtest.BotMember{Status: "administrator"}, "an administrator without the right to post messages"},
		{"removed", telegramtest.Chat{ID: -4104, Type: "group", Title: "Ops"}, &telegramtest.BotMember{Status: "left"}, "not a member any more"},
	} {
		t.Run(c.name, func(t *testing.T) {
			t.Parallel()
			r := newRig(t)
			r.srv.AddChat(c.chat)
			r.command(alice, "/send "+itoa(c.chat.ID)+" the weekly numbers")
			card := r.card(alice)
			opID := opIn(t, card.Text[strings.Index(card.Text, "Operation: "):])
			if c.member != nil {
				r.srv.SetBotMember(c.chat.ID, *c.member)
			}
			r.tap(alice, card, "Approve")
			if c.member == nil {
				r.committed(opID)
				if n := len(r.srv.Messages(c.chat.ID)); n != 1 {
					t.Errorf("messages in the chat = %d, want 1", n)
				}
				return
			}
			r.replyContaining(alice, "may no longer post in chat "+itoa(c.chat.ID))
			op := r.operation(opID)
			var res action.Result
			if op.Result != nil {
				res = *op.Result
			}
			if op.State != journal.Failed || op.Attempts != 0 || res.SideEffect != action.SideEffectNone || res.Cause != action.CauseChanged ||
				!strings.Contains(res.Reason, "it is "+c.status+"; nothing was sent") {
				t.Errorf("operation = %s, %d attempts, %+v; want failed, nothing tried, saying the bot is %s", op.State, op.Attempts, res, c.status)
			}
			ts, err := r.j.Transitions(context.Background(), opID)
			if err != nil {
				t.Fatal(err)
			}
			if last := ts[len(ts)-1]; last.From != journal.Approved || last.To != journal.Failed {
				t.Errorf("last move = %+v, want approved -> failed", last)
			}
			if n := len(r.srv.Messages(c.chat.ID)); n != 0 {
				t.Errorf("messages in the chat = %d, want none", n)
			}
		})
	}
}

// A getChat that fails at the read again does not send blindly, nor lose the
// operation: nothing was sent, so it waits and reads again (approved ->
// retry_wait, side effect none), and sends once the chat reads as it did.
func TestAChatNotReadAgainIsRetried(t *testing.T) {
	t.Parallel()
	r := newRig(t)
	chat := telegramtest.Chat{ID: -4201, Type: "group", Title: "Ops"}
	r.srv.AddChat(chat)
	r.command(alice, "/send -4201 the weekly numbers")
	card := r.card(alice)
	opID := opIn(t, card.Text[strings.Index(card.Text, "Operation: "):])
	fault := r.srv.Inject(telegramtest.BadGateway().For("getChat").InChat(chat.ID))
	r.tap(alice, card, "Approve")
	r.committed(opID)
	if fault.Fired() != 1 {
		t.Errorf("the fault fired %d times, want once", fault.Fired())
	}
	ts, err := r.j.Transitions(context.Background(), opID)
	if err != nil {
		t.Fatal(err)
	}
	var path []string
	waited := false
	for _, tr := range ts {
		path = append(path, string(tr.From)+"->"+string(tr.To))
		if tr.From == journal.Approved && tr.To == journal.RetryWait && strings.Contains(tr.Reason, "the chat could not be read again before the send") {
			waited = true
		}
	}
	if !waited || ts[len(ts)-1].To != journal.Committed {
		t.Errorf("path = %v, want approved -> retry_wait (the read), then on to committed", path)
	}
	if n := len(r.srv.Messages(chat.ID)); n != 1 {
		t.Errorf("messages = %d, want 1", n)
	}
}

func itoa(n int64) string { return strconv.FormatInt(n, 10) }

// audienceOf is a declared chat as a payload names it.
func audienceOf(c telegramtest.Chat) action.Audience {
	name := c.Title
	if name == "" {
		name = strings.TrimSpace(c.FirstName + " " + c.LastName)
	}
	return action.Audience{Name: name, Username: c.Username, Type: c.Type}
}

// A long text whose first part is in the chat already is finished as it
// began: a retry of its second part does not stop on the chat renamed since
// (that would cut the text in two, with a part already read), and its parts
// all arrive.
func TestALongTextBegunIsFinished(t *testing.T) {
	t.Parallel()
	r := newRig(t)
	chat := telegramtest.Chat{ID: -4301, Type: "group", Title: "Ops"}
	r.srv.AddChat(chat)
	var b strings.Builder
	for i := 0; b.Len() < 6000; i++ {
		fmt.Fprintf(&b, "Paragraph %d of the weekly report, with enough words to fill it.\n\n", i)
	}
	text := b.String()[:6000]
	refused := r.srv.Inject(telegramtest.TooManyRequests(1).For("sendMessage").InChat(chat.ID).OnCall(2))
	r.command(alice, "/send -4301 "+text)
	card := r.card(alice)
	opID := opIn(t, card.Text[strings.Index(card.Text, "Operation: "):])
	r.tap(alice, card, "Approve")
	r.waitFor("part 2 refused once", func(*telegramtest.Server) bool { return refused.Fired() == 1 })
	r.srv.AddChat(telegramtest.Chat{ID: chat.ID, Type: "group", Title: "Ops, renamed"})
	r.committed(opID)
	if got := r.srv.Messages(chat.ID); len(got) != 2 || got[0].RawText+got[1].RawText != text {
		t.Errorf("%d messages, want the 2 parts of the text", len(got))
	}
}
