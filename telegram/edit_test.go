package telegram_test

import (
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/go-telegram/bot"

	"github.com/countersign/countersign/journal"
	"github.com/countersign/countersign/operator"
	"github.com/countersign/countersign/policy"
	"github.com/countersign/countersign/telegram/telegramtest"
)

// withEdits offers commit_edit_message, declared with class (or its own, "").
func withEdits(class policy.Idempotency) rigOption {
	return withPolicy(func(p *policy.Policy) {
		p.Tools["commit_edit_message"] = policy.Tool{SideEffect: policy.SideEffectCommitted, Approval: policy.ApprovalRequired, Idempotency: class}
	})
}

// An edit is a state-setting call: when its answer is lost after Telegram made
// the change, the operator settles the outcome itself, by making the same edit
// again and reading Telegram's "message is not modified". The message is edited
// once, the operation is committed with the reason ReasonSettled and the
// message as evidence, both attempts are in the journal, and no envelope asks a
// person to verify.
func TestAnEditWhoseAnswerWasLostIsSettledByRepeatingIt(t *testing.T) {
	t.Parallel()
	r := newRig(t, withEdits(""))
	r.command(alice, "/send 222 the meeting is at 10")
	r.tap(alice, r.card(alice), "Approve")
	r.waitFor("the delivery", atLeast(1, delivered(target)))
	sent := r.srv.Messages(target)[0]
	sendOp := opIn(t, r.replyContaining(alice, "Sent op-").Text)

	r.srv.Inject(telegramtest.AcceptThenDrop().For("editMessageText").InChat(target))
	r.command(alice, "/edit "+sendOp+" the meeting is at 11")
	card := r.replyContaining(alice, "Changes message")
	for _, want := range []string{"It reads now:\nthe meeting is at 10", "It will read, exactly as it will be sent", "the meeting is at 11"} {
		if !strings.Contains(card.Text, want) {
			t.Errorf("card lacks %q:\n%s", want, card.Text)
		}
	}
	editOp := opIn(t, card.Text[strings.Index(card.Text, "Operation: "):])
	r.tap(alice, card, "Approve")
	r.waitFor("the edit committed", func(*telegramtest.Server) bool { return r.operation(editOp).State == journal.Committed })

	if m, _ := r.srv.Message(target, sent.MessageID); m.Text != "the meeting is at 11" {
		t.Errorf("the message reads %q, want the edit", m.Text)
	}
	if edits := editsIn(r.srv, target); edits != 2 {
		t.Errorf("editMessageText calls = %d, want the lost one and its repeat", edits)
	}
	op := r.operation(editOp)
	ts, _ := r.j.Transitions(t.Context(), editOp)
	if last := ts[len(ts)-1]; last.Reason != operator.ReasonSettled {
		t.Errorf("last transition %+v, want %q", last, operator.ReasonSettled)
	}
	if op.Result == nil || op.Result.Evidence == nil || len(op.Result.Evidence.MessageIDs) != 1 || op.Result.Evidence.MessageIDs[0] != int64(sent.MessageID) {
		t.Errorf("result = %+v, want the edited message as evidence", op.Result)
	}
	as, _ := r.j.Attempts(t.Context(), editOp)
	if len(as) != 2 || as[0].Outcome != "unknown" || as[1].Outcome != "committed" {
		t.Errorf("attempts = %+v, want the lost one unknown, the repeat committed", as)
	}
	if _, _, err := r.vault.Get(editOp); err == nil {
		t.Error("an envelope asks a person to verify an edit the operator settled")
	}
}

// A policy that declares the edit additive keeps its unknown outcomes for a
// person: nothing is repeated, and an envelope is written.
func TestAnEditDeclaredAdditiveIsLeftToAPerson(t *testing.T) {
	t.Parallel()
	r := newRig(t, withEdits(policy.Additive))
	r.command(alice, "/send 222 the meeting is at 10")
	r.tap(alice, r.card(alice), "Approve")
	sendOp := opIn(t, r.replyContaining(alice, "Sent op-").Text)
	r.srv.Inject(telegramtest.AcceptThenDrop().For("editMessageText").InChat(target))
	r.command(alice, "/edit "+sendOp+" the meeting is at 11")
	card := r.replyContaining(alice, "Changes message")
	editOp := opIn(t, card.Text[strings.Index(card.Text, "Operation: "):])
	r.tap(alice, card, "Approve")
	r.waitFor("the edit's outcome", func(*telegramtest.Server) bool { return r.operation(editOp).State == journal.Unknown })
	if n := editsIn(r.srv, target); n != 1 {
		t.Errorf("editMessageText calls = %d, want 1: an additive call is never repeated", n)
	}
	// The envelope is written just after the move to unknown.
	r.waitFor("the envelope for a person", func(*telegramtest.Server) bool {
		e, _, err := r.vault.Get(editOp)
		return err == nil && e.Unresolved()
	})
}

// Only a message this bot sent can be edited: an operation that delivered
// nothing is refused before any card, and so is an edit to the same text.
func TestOnlyAMessageThisBotSentIsEdited(t *testing.T) {
	t.Parallel()
	r := newRig(t, withEdits(""))
	r.command(alice, "/edit op-nosuch1 new words")
	r.replyContaining(alice, "no message this bot sent")
	r.command(alice, "/send 222 as it is")
	r.tap(alice, r.card(alice), "Approve")
	sendOp := opIn(t, r.replyContaining(alice, "Sent op-").Text)
	r.command(alice, "/edit "+sendOp+" as it is")
	r.replyContaining(alice, "already reads so")
	if n := editsIn(r.srv, target); n != 0 {
		t.Errorf("editMessageText calls = %d, want none", n)
	}
}

// editsIn counts the editMessageText calls in chat (the cards' own edits are in
// the approvers' chats).
func editsIn(s *telegramtest.Server, chat int64) int {
	n := 0
	for _, c := range s.CallsTo("editMessageText") {
		if c.ChatID == chat {
			n++
		}
	}
	return n
}

// withDeletes offers commit_delete_message.
func withDeletes() rigOption {
	return withPolicy(func(p *policy.Policy) {
		p.Tools["commit_delete_message"] = policy.Tool{SideEffect: policy.SideEffectCommitted, Approval: policy.ApprovalRequired}
	})
}

// A delete is state-setting too: when its answer is lost after Telegram deleted
// the message, the repeat's "message to delete not found" settles it. The card
// quotes the message it removes, and the message is gone once.
func TestADeleteWhoseAnswerWasLostIsSettledByRepeatingIt(t *testing.T) {
	t.Parallel()
	r := newRig(t, withDeletes(), withEdits(""))
	r.command(alice, "/send 222 a message sent by mistake")
	r.tap(alice, r.card(alice), "Approve")
	sendOp := opIn(t, r.replyContaining(alice, "Sent op-").Text)
	sent := r.srv.Messages(target)[0]

	r.srv.Inject(telegramtest.AcceptThenDrop().For("deleteMessage").InChat(target))
	r.command(alice, "/delete "+sendOp)
	card := r.replyContaining(alice, "Deletes, for everyone, message")
	if !strings.Contains(card.Text, "It reads now:\na message sent by mistake") {
		t.Errorf("card does not quote the message it removes:\n%s", card.Text)
	}
	delOp := opIn(t, card.Text[strings.Index(card.Text, "Operation: "):])
	r.tap(alice, card, "Approve")
	r.waitFor("the delete committed", func(*telegramtest.Server) bool { return r.operation(delOp).State == journal.Committed })
	if m, _ := r.srv.Message(target, sent.MessageID); !m.Deleted {
		t.Error("the message is still in the chat")
	}
	var deletes int
	for _, c := range r.srv.CallsTo("deleteMessage") {
		if c.ChatID == target {
			deletes++
		}
	}
	if deletes != 2 {
		t.Errorf("deleteMessage calls = %d, want the lost one and its repeat", deletes)
	}
	ts, _ := r.j.Transitions(t.Context(), delOp)
	if last := ts[len(ts)-1]; last.Reason != operator.ReasonSettled {
		t.Errorf("last transition %+v, want %q", last, operator.ReasonSettled)
	}
	// A deleted message is edited or deleted no more.
	r.command(alice, "/edit "+sendOp+" too late")
	r.replyContaining(alice, "was deleted")
}

// withPins offers commit_pin_message and commit_unpin_message.
func withPins() rigOption {
	return withPolicy(func(p *policy.Policy) {
		for _, name := range []string{"commit_pin_message", "commit_unpin_message"} {
			p.Tools[name] = policy.Tool{SideEffect: policy.SideEffectCommitted, Approval: policy.ApprovalRequired}
		}
	})
}

// A pin is settled by reading, never by pinning twice (a pin that notifies
// would notify again): when its answer is lost after Telegram pinned the
// message, getChat's pinned message settles it committed; when the request was
// lost before Telegram took it, the same reading settles it not delivered, for
// a /retry. Another message already pinned in the chat changes neither: only
// our message being the pinned one settles the pin committed. Pins are silent
// unless asked.
func TestAPinIsSettledByReadingTheChat(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name      string
		fault     telegramtest.Fault
		other     bool // another message is pinned in the chat before
		wantState journal.State
		reason    string
	}{
		{"answer lost after the pin", telegramtest.AcceptThenDrop(), false, journal.Committed, operator.ReasonSettledByReading},
		{"request lost before it", telegramtest.BadGateway(), false, journal.NotDelivered, operator.ReasonNotInEffect},
		{"answer lost after the pin, another pinned", telegramtest.AcceptThenDrop(), true, journal.Committed, operator.ReasonSettledByReading},
		{"request lost before it, another pinned", telegramtest.BadGateway(), true, journal.NotDelivered, operator.ReasonNotInEffect},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r := newRig(t, withPins())
			r.command(alice, "/send 222 read me first")
			r.tap(alice, r.card(alice), "Approve")
			sendOp := opIn(t, r.replyContaining(alice, "Sent op-").Text)
			sent := r.srv.Messages(target)[0]
			otherID := 0
			if tc.other {
				r.command(alice, "/send 222 pinned already")
				r.tap(alice, r.card(alice), "Approve")
				r.waitFor("the other message sent", func(s *telegramtest.Server) bool { return len(s.Messages(target)) == 2 })
				otherID = r.srv.Messages(target)[1].MessageID
				api, err := bot.New(token, bot.WithServerURL(r.srv.URL()), bot.WithSkipGetMe())
				if err == nil {
					_, err = api.PinChatMessage(t.Context(), &bot.PinChatMessageParams{ChatID: target, MessageID: otherID})
				}
				if err != nil {
					t.Fatal(err)
				}
			}

			r.srv.Inject(tc.fault.For("pinChatMessage").InChat(target))
			r.command(alice, "/pin "+sendOp)
			card := r.replyContaining(alice, "Pins, silently, message")
			pinOp := opIn(t, card.Text[strings.Index(card.Text, "Operation: "):])
			r.tap(alice, card, "Approve")
			r.waitFor("the pin settled", func(*telegramtest.Server) bool { return r.operation(pinOp).State == tc.wantState })

			pins, pinSeq := 0, 0
			for _, c := range r.srv.CallsTo("pinChatMessage") {
				if c.ChatID == target && c.Params["message_id"] == strconv.Itoa(sent.MessageID) {
					pins, pinSeq = pins+1, c.Seq
					if c.Params["disable_notification"] != "true" {
						t.Errorf("pin params %v, want a silent pin", c.Params)
					}
				}
			}
			if pins != 1 {
				t.Errorf("pinChatMessage calls = %d, want 1: a pin is settled by reading, never made twice", pins)
			}
			read := false
			for _, c := range r.srv.CallsTo("getChat") {
				read = read || c.Seq > pinSeq && c.ChatID == target
			}
			if !read {
				t.Error("the chat was never read after the pin")
			}
			ts, _ := r.j.Transitions(t.Context(), pinOp)
			if last := ts[len(ts)-1]; last.Reason != tc.reason {
				t.Errorf("last transition %+v, want %q", last, tc.reason)
			}
			pinned := r.srv.Pinned(target)
			var want []int
			if tc.other {
				want = append(want, otherID)
			}
			if tc.wantState == journal.Committed {
				want = append(want, sent.MessageID)
			}
			if !slices.Equal(pinned, want) {
				t.Errorf("pinned = %v, want %v", pinned, want)
			}
		})
	}
}

// A pin whose process stopped while it was committing is settled by the next
// start by reading the chat, never by pinning again (a pin that notifies would
// notify twice): whether the stopped process's pin had landed or not, and with
// another message pinned before it or not, the operation ends as the chat
// shows, its path in the journal, and pinChatMessage is never called by the
// start.
func TestAPinAStopLeftCommittingIsSettledByReadingTheChat(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name          string
		landed, other bool
		wantState     journal.State
		path          []string
	}{
		{"landed", true, false, journal.Committed,
			[]string{journal.ReasonCrashRecovery, operator.ReasonSettleStopped, operator.ReasonSettledByReading}},
		{"landed, another pinned", true, true, journal.Committed,
			[]string{journal.ReasonCrashRecovery, operator.ReasonSettleStopped, operator.ReasonSettledByReading}},
		{"not landed, another pinned", false, true, journal.NotDelivered,
			[]string{operator.ReasonSettleStopped, "", operator.ReasonNotInEffect}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r := newRig(t, withPins())
			r.command(alice, "/send 222 pin me")
			r.tap(alice, r.card(alice), "Approve")
			sendOp := opIn(t, r.replyContaining(alice, "Sent op-").Text)
			sent := r.srv.Messages(target)[0]
			ctx := t.Context()
			api, err := bot.New(token, bot.WithServerURL(r.srv.URL()), bot.WithSkipGetMe())
			if err != nil {
				t.Fatal(err)
			}
			var want []int
			if tc.other {
				r.command(alice, "/send 222 pinned already")
				r.tap(alice, r.card(alice), "Approve")
				r.waitFor("the other message sent", func(s *telegramtest.Server) bool { return len(s.Messages(target)) == 2 })
				other := r.srv.Messages(target)[1].MessageID
				if _, err := api.PinChatMessage(ctx, &bot.PinChatMessageParams{ChatID: target, MessageID: other}); err != nil {
					t.Fatal(err)
				}
				want = append(want, other)
			}
			r.command(alice, "/pin "+sendOp)
			card := r.replyContaining(alice, "Pins, silently, message")
			pinOp := opIn(t, card.Text[strings.Index(card.Text, "Operation: "):])
			r.shutdown()

			// What the stopped process did: approved, wrote committing, and
			// (or not) got its pin to Telegram before it died.
			j, err := journal.Open(ctx, filepath.Join(r.dir, "journal.db"))
			if err != nil {
				t.Fatal(err)
			}
			a, err := j.LatestApproval(ctx, pinOp)
			if err == nil {
				_, err = j.Decide(ctx, a.ID, journal.DecideApprove, alice)
			}
			if err == nil {
				err = j.Move(ctx, pinOp, journal.Move{From: journal.Approved, To: journal.Committing, Reason: "attempt 1", StartAttempt: true})
			}
			j.Close()
			if err != nil {
				t.Fatal(err)
			}
			if tc.landed {
				if _, err := api.PinChatMessage(ctx, &bot.PinChatMessageParams{ChatID: target, MessageID: sent.MessageID, DisableNotification: true}); err != nil {
					t.Fatal(err)
				}
				want = append(want, sent.MessageID)
			}
			before := len(r.srv.CallsTo("pinChatMessage"))

			r.start()
			r.waitFor("the pin settled", func(*telegramtest.Server) bool { return r.operation(pinOp).State == tc.wantState })
			if n := len(r.srv.CallsTo("pinChatMessage")) - before; n != 0 {
				t.Errorf("pinChatMessage calls after the start = %d, want none: a pin is settled by reading the chat", n)
			}
			if got := r.srv.Pinned(target); !slices.Equal(got, want) {
				t.Errorf("pinned = %v, want %v", got, want)
			}
			ts, _ := r.j.Transitions(ctx, pinOp)
			var path []string
			for _, tr := range ts[len(ts)-3:] {
				path = append(path, tr.Reason)
			}
			// The move back to unknown on the way to not delivered carries the
			// stop's reason, whatever its words: only its place is checked.
			if tc.path[1] == "" && len(path) == 3 {
				path[1] = ""
			}
			if !slices.Equal(path, tc.path) {
				t.Errorf("last transitions %q, want %q", path, tc.path)
			}
		})
	}
}

// An edit whose process stopped while it was committing is settled by the
// next start, not left to a person: recovery makes it unknown, and the
// operator repeats it under its own claim and reads Telegram's answer. Whether
// the stopped process's request had landed or not, the message ends edited
// once, the operation committed, its path in the journal, and no envelope.
func TestAnEditAStopLeftUnknownIsSettledByTheNextStart(t *testing.T) {
	t.Parallel()
	for _, landed := range []bool{true, false} {
		t.Run(map[bool]string{true: "landed", false: "not landed"}[landed], func(t *testing.T) {
			r := newRig(t, withEdits(""))
			r.command(alice, "/send 222 the meeting is at 10")
			r.tap(alice, r.card(alice), "Approve")
			sendOp := opIn(t, r.replyContaining(alice, "Sent op-").Text)
			sent := r.srv.Messages(target)
			r.command(alice, "/edit "+sendOp+" the meeting is at 11")
			card := r.replyContaining(alice, "Changes message")
			editOp := opIn(t, card.Text[strings.Index(card.Text, "Operation: "):])
			r.shutdown()

			// What the stopped process did: approved, wrote committing, and
			// (or not) got its edit to Telegram before it died.
			ctx := t.Context()
			j, err := journal.Open(ctx, filepath.Join(r.dir, "journal.db"))
			if err != nil {
				t.Fatal(err)
			}
			a, err := j.LatestApproval(ctx, editOp)
			if err == nil {
				_, err = j.Decide(ctx, a.ID, journal.DecideApprove, alice)
			}
			if err == nil {
				err = j.Move(ctx, editOp, journal.Move{From: journal.Approved, To: journal.Committing, Reason: "attempt 1", StartAttempt: true})
			}
			j.Close()
			if err != nil {
				t.Fatal(err)
			}
			if landed {
				api, err := bot.New(token, bot.WithServerURL(r.srv.URL()), bot.WithSkipGetMe())
				if err == nil {
					_, err = api.EditMessageText(ctx, &bot.EditMessageTextParams{ChatID: target, MessageID: sent[0].MessageID, Text: "the meeting is at 11"})
				}
				if err != nil {
					t.Fatal(err)
				}
			}
			before := editsIn(r.srv, target)

			r.start()
			r.waitFor("the edit settled", func(*telegramtest.Server) bool { return r.operation(editOp).State == journal.Committed })
			if m, _ := r.srv.Message(target, sent[0].MessageID); m.Text != "the meeting is at 11" || m.Edits != 1 {
				t.Errorf("message reads %q after %d edits, want the edit, once", m.Text, m.Edits)
			}
			if n := editsIn(r.srv, target) - before; n != 1 {
				t.Errorf("editMessageText calls after the start = %d, want the one repeat", n)
			}
			ts, _ := r.j.Transitions(ctx, editOp)
			var path []string
			for _, tr := range ts[len(ts)-3:] {
				path = append(path, tr.Reason)
			}
			if want := []string{journal.ReasonCrashRecovery, operator.ReasonSettleStopped, operator.ReasonSettled}; !slices.Equal(path, want) {
				t.Errorf("last transitions %q, want %q", path, want)
			}
			// The start's reconcile wrote the note before the settling: it
			// says delivered now, and asks nobody anything.
			r.waitFor("the note resolved", func(*telegramtest.Server) bool {
				e, _, err := r.vault.Get(editOp)
				return err != nil || !e.Unresolved()
			})
		})
	}
}
