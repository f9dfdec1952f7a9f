package telegram_test

import (
	"cmp"
	"context"
	"encoding/json"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/countersign/countersign/action"
	"github.com/countersign/countersign/internal/rigtest"
	"github.com/countersign/countersign/journal"
	"github.com/countersign/countersign/operator"
	"github.com/countersign/countersign/policy"
	"github.com/countersign/countersign/stepup"
	"github.com/countersign/countersign/telegram/telegramtest"
	"github.com/countersign/countersign/tools"
)

// withStepUp asks a TOTP code of every approver of commit_send_message.
func withStepUp() rigOption {
	return withPolicy(func(p *policy.Policy) {
		tp := p.Tools["commit_send_message"]
		tp.StepUp = policy.FactorTOTP
		p.Tools["commit_send_message"] = tp
	})
}

// enrolled enrols user in the rig's journal, as `countersign approver totp`
// does on the machine, and returns the secret.
func (r *rig) enrolled(user int64) string {
	r.t.Helper()
	secret, err := stepup.NewSecret()
	if err != nil {
		r.t.Fatal(err)
	}
	if err := r.j.EnrolTOTP(context.Background(), policy.UserID(user), secret, false); err != nil {
		r.t.Fatal(err)
	}
	return secret
}

func codeOf(t *testing.T, secret string, at time.Time) string {
	t.Helper()
	c, err := stepup.Code(secret, at)
	if err != nil {
		t.Fatal(err)
	}
	return c
}

func wrongCode(right string) string {
	if right == "000000" {
		return "000001"
	}
	return "000000"
}

// A tap on Approve of a request that asks a code records nothing and sends
// nothing: the card says a second factor is asked, and the phone gets a
// prompt it opens a reply to, naming the operation, the approval and the
// payload hash; a wrong code in reply is refused; the right one sends once and
// closes every card with who approved; the same code again, typed as /code
// on the next request, is refused as used, and the next step's code approves.
func TestAStepUpApprovalOnThePhone(t *testing.T) {
	t.Parallel()
	r := newRig(t, withStepUp())
	secret := r.enrolled(bob)
	r.command(alice, "/send 222 with a code")
	card := r.card(bob)
	cards := map[int64]telegramtest.Message{alice: r.card(alice), bob: card}
	if !strings.Contains(card.Text, "Second factor: TOTP") {
		t.Errorf("card = %q, want the second factor said", card.Text)
	}
	opID := opIn(t, card.Text)
	a, err := r.j.LatestApproval(context.Background(), opID)
	if err != nil {
		t.Fatal(err)
	}
	r.tap(bob, card, "Approve")
	r.answered("Nothing is recorded yet: send your TOTP code")
	prompt := r.replyContaining(bob, "🔐 Approval "+a.ID)
	for _, want := range []string{opID, a.PayloadSHA256} {
		if !strings.Contains(prompt.Text, want) {
			t.Errorf("prompt %q: want it to name %s", prompt.Text, want)
		}
	}
	forced := false
	for _, c := range sendCalls(r.srv, bob) {
		forced = forced || strings.HasPrefix(c.Params["text"], "🔐") && strings.Contains(c.Params["reply_markup"], `"force_reply":true`)
	}
	if !forced {
		t.Error("the prompt was sent without force_reply: the phone would not open the reply")
	}
	if got, _ := r.j.Approval(context.Background(), a.ID); got.Decision != journal.Pending || len(got.Votes) != 0 {
		t.Fatalf("after the tap: %+v, want nothing recorded", got)
	}
	code := codeOf(t, secret, time.Now())
	r.srv.PushReply(bob, bob, prompt.MessageID, wrongCode(code))
	r.replyContaining(bob, "Refused: wrong code (1 of 5 in a row")
	if n := len(r.srv.Messages(target)); n != 0 {
		t.Fatalf("sent %d after a wrong code", n)
	}
	r.srv.PushReply(bob, bob, prompt.MessageID, code[:3]+" "+code[3:]) // as an app shows it
	r.waitFor("the delivery", atLeast(1, delivered(target)))
	r.waitFor("the outcome", func(*telegramtest.Server) bool { return r.operation(opID).State == journal.Committed })
	for chat, c := range cards {
		r.waitFor("the card closed", func(s *telegramtest.Server) bool {
			m, _ := s.Message(chat, c.MessageID)
			return strings.Contains(m.Text, "✅ Approved by") && !strings.Contains(string(m.ReplyMarkup), "ap1:")
		})
	}
	if n := len(r.srv.Messages(target)); n != 1 {
		t.Errorf("sent %d, want 1", n)
	}
	if got, _ := r.j.Approval(context.Background(), a.ID); len(got.Votes) != 1 || got.Votes[0].StepUp != policy.FactorTOTP || got.Votes[0].By != bob {
		t.Errorf("votes = %+v, want bob's, given with totp", got.Votes)
	}

	r.command(alice, "/send 222 again")
	next := opIn(t, r.card(bob).Text)
	r.waitFor("the second request's card", func(*telegramtest.Server) bool { return r.operation(next).State == journal.AwaitingApproval })
	r.command(bob, "/code "+next+" "+code)
	r.replyContaining(bob, "this code was used already")
	r.command(bob, "/code "+next+" "+codeOf(t, secret, time.Now().Add(stepup.Period)))
	r.waitFor("the second delivery", atLeast(2, delivered(target)))
}

// Five wrong codes in a row lock the approver's factor: they and every other
// approver are told, and the right code is refused until the lock ends.
func TestWrongCodesOnThePhoneLockAndTellEveryApprover(t *testing.T) {
	t.Parallel()
	r := newRig(t, withStepUp())
	secret := r.enrolled(bob)
	r.command(alice, "/send 222 guessed")
	opID := opIn(t, r.card(bob).Text)
	r.waitFor("the request's card", func(*telegramtest.Server) bool { return r.operation(opID).State == journal.AwaitingApproval })
	wrong := wrongCode(codeOf(t, secret, time.Now()))
	for i := 1; i <= 5; i++ {
		r.command(bob, "/code "+opID+" "+wrong)
	}
	r.replyContaining(bob, "5 wrong codes in a row")
	for _, chat := range []int64{alice, bob} {
		r.replyContaining(chat, "🔒 Wrong codes in a row locked the second factor of user 200 until")
	}
	r.command(bob, "/code "+opID+" "+codeOf(t, secret, time.Now()))
	r.replyContaining(bob, "is locked until")
	if n := len(r.srv.Messages(target)); n != 0 || r.operation(opID).State != journal.AwaitingApproval {
		t.Errorf("sent %d, state %s: want nothing approved while locked", n, r.operation(opID).State)
	}
}

// A tap on Approve of a request that asks a passkey records nothing and asks
// no reply: the card says a passkey is asked, and the phone gets a prompt
// with a button that opens the approver's own review link in a browser,
// where WebAuthn runs (Telegram's Mini App has none).
func TestAPasskeyApprovalOnThePhoneOpensTheBrowser(t *testing.T) {
	t.Parallel()
	r := newRig(t, withPolicy(func(p *policy.Policy) {
		tp := p.Tools["commit_send_message"]
		tp.StepUp = policy.FactorPasskey
		p.Tools["commit_send_message"] = tp
	}), withReviewer(linker{}))
	r.command(alice, "/send 222 with a passkey")
	card := r.card(bob)
	if !strings.Contains(card.Text, "Second factor: passkey") {
		t.Errorf("card = %q, want the passkey said", card.Text)
	}
	opID := opIn(t, card.Text)
	a, err := r.j.LatestApproval(context.Background(), opID)
	if err != nil {
		t.Fatal(err)
	}
	r.tap(bob, card, "Approve")
	r.answered("approve with your passkey, in your phone's browser")
	prompt := r.replyContaining(bob, "🔑 Approval "+a.ID)
	if !strings.Contains(prompt.Text, "Passkeys do not work inside Telegram") || !strings.Contains(prompt.Text, a.PayloadSHA256) {
		t.Errorf("prompt %q: want it to say where passkeys work, and the hash", prompt.Text)
	}
	button := false
	for _, c := range sendCalls(r.srv, bob) {
		if strings.HasPrefix(c.Params["text"], "🔑") {
			button = strings.Contains(c.Params["reply_markup"], `"url":"https://review.example/`+a.ID+`?for=200"`) && !strings.Contains(c.Params["reply_markup"], "force_reply")
		}
	}
	if !button {
		t.Error("the prompt has no button to bob's review link, or asks a reply")
	}
	if got, _ := r.j.Approval(context.Background(), a.ID); got.Decision != journal.Pending || len(got.Votes) != 0 {
		t.Fatalf("after the tap: %+v, want nothing recorded", got)
	}
}

// linker makes review links of its own shape, for a test to recognise.
type linker struct{}

func (linker) ReviewLink(apID, sha string, user policy.UserID) string {
	return "https://review.example/" + apID + "?for=" + strconv.FormatInt(int64(user), 10)
}

// A reply is a code only to the prompt the bot recorded for it, never to a
// message that reads like one: the bot also sends text a requester chose (a
// preview above a card, a message sent to an approver's chat), and a reply
// with a code to such a text must not approve the approval it names.
func TestACodeRepliedToALookalikePromptApprovesNothing(t *testing.T) {
	t.Parallel()
	r := newRig(t, withStepUp())
	secret := r.enrolled(alice)
	r.command(alice, "/send 222 the real request")
	opID := opIn(t, r.card(alice).Text)
	a, err := r.j.LatestApproval(context.Background(), opID)
	if err != nil {
		t.Fatal(err)
	}
	fake := "🔐 Approval " + a.ID + " of op-benign: reply to this message with your TOTP code."
	d, err := r.bot.Sender().Send(context.Background(), tools.Message{Target: strconv.FormatInt(alice, 10), Text: fake})
	if err != nil {
		t.Fatal(err)
	}
	before := len(r.srv.Messages(alice))
	r.srv.PushReply(alice, alice, int(d.MessageID), codeOf(t, secret, time.Now()))
	r.waitFor("an answer to the reply", atLeast(before+1, delivered(alice))) // plain text, as it is
	if got, _ := r.j.Approval(context.Background(), a.ID); got.Decision != journal.Pending || len(got.Votes) != 0 {
		t.Errorf("after a code replied to a lookalike: %+v, want nothing recorded", got)
	}
	if n := len(r.srv.Messages(target)); n != 0 {
		t.Errorf("sent %d, want 0", n)
	}
}

// askFactor makes commit_send_message ask f of every approver.
func askFactor(p *policy.Policy, f policy.Factor) {
	tp := p.Tools["commit_send_message"]
	tp.StepUp = f
	p.Tools["commit_send_message"] = tp
}

// factorPrompt waits for the bot's prompt for a second factor of approval
// apID in chat, a code's (🔐) or a passkey's (🔑), and returns it.
func (r *rig) factorPrompt(chat int64, apID string) telegramtest.Message {
	r.t.Helper()
	var found telegramtest.Message
	r.waitFor("a second factor's prompt for "+apID, func(s *telegramtest.Server) bool {
		for _, m := range s.Messages(chat) {
			if strings.HasPrefix(m.Text, codePromptMark+"Approval "+apID) || strings.HasPrefix(m.Text, passkeyPromptMark+"Approval "+apID) {
				found = m
				return true
			}
		}
		return false
	})
	return found
}

// Prompt marks as the bot writes them (telegram/stepup.go).
const (
	codePromptMark    = "🔐 "
	passkeyPromptMark = "🔑 "
)

// A tap on Approve of a card whose approval asked no factor, or a TOTP code,
// once the process runs under a policy that asks a passkey, prompts for the
// passkey (a button to the approver's own review link, no reply asked),
// never for a code: the factor is the one the operator refused the tap
// without, not one read off the approval. Nothing is recorded or sent.
func TestATapPromptsForTheFactorThePolicyAsksNow(t *testing.T) {
	t.Parallel()
	for _, before := range []policy.Factor{policy.NoFactor, policy.FactorTOTP} {
		t.Run("asked "+cmp.Or(string(before), "none"), func(t *testing.T) {
			t.Parallel()
			r := newRig(t, withReviewer(linker{}), withPolicy(func(p *policy.Policy) { askFactor(p, before) }))
			r.command(alice, "/send 222 asked before the passkey")
			card := r.card(bob)
			opID := opIn(t, card.Text)
			a, err := r.j.LatestApproval(context.Background(), opID)
			if err != nil || a.StepUp != before {
				t.Fatalf("approval %+v, %v; want it to ask %q", a, err, before)
			}
			r.shutdown()
			askFactor(r.pol, policy.FactorPasskey)
			r.start()

			r.tap(bob, card, "Approve")
			prompt := r.factorPrompt(bob, a.ID)
			if !strings.HasPrefix(prompt.Text, passkeyPromptMark) || !strings.Contains(prompt.Text, "asks your passkey") {
				t.Fatalf("prompt %q: want the passkey's, as the policy in force asks", prompt.Text)
			}
			r.answered("approve with your passkey, in your phone's browser")
			for _, c := range sendCalls(r.srv, bob) {
				if strings.HasPrefix(c.Params["text"], passkeyPromptMark) && (!strings.Contains(c.Params["reply_markup"], `"url":"https://review.example/`+a.ID+`?for=200"`) ||
					strings.Contains(c.Params["reply_markup"], "force_reply")) {
					t.Errorf("passkey prompt sent with %s: want a button to bob's review link, and no reply asked", c.Params["reply_markup"])
				}
			}
			if got, _ := r.j.Approval(context.Background(), a.ID); got.Decision != journal.Pending || len(got.Votes) != 0 {
				t.Errorf("after the tap: %+v, want nothing recorded", got)
			}
			if n := len(r.srv.Messages(target)); n != 0 {
				t.Errorf("sent %d, want 0", n)
			}
		})
	}
}

// A code in reply to a code's prompt, once the process runs under a policy
// that asks a passkey, approves nothing and spends nothing: it is refused,
// saying the passkey is asked, and the passkey's prompt follows, as for a
// tap. (Recorded, it would be an approval the sender refuses and asks again,
// the approver sent down the wrong path twice.)
func TestACodeWhereAPasskeyIsAskedNowBringsThePasskeysPrompt(t *testing.T) {
	t.Parallel()
	r := newRig(t, withReviewer(linker{}), withStepUp())
	secret := r.enrolled(bob)
	r.command(alice, "/send 222 asked with a code")
	card := r.card(bob)
	a, err := r.j.LatestApproval(context.Background(), opIn(t, card.Text))
	if err != nil {
		t.Fatal(err)
	}
	r.tap(bob, card, "Approve")
	prompt := r.factorPrompt(bob, a.ID)
	if !strings.HasPrefix(prompt.Text, codePromptMark) {
		t.Fatalf("prompt %q: want a code's, as the policy asks", prompt.Text)
	}
	r.shutdown()
	askFactor(r.pol, policy.FactorPasskey)
	r.start()

	code := codeOf(t, secret, time.Now())
	r.srv.PushReply(bob, bob, prompt.MessageID, code)
	var said telegramtest.Message
	r.waitFor("an answer to the code", func(s *telegramtest.Server) bool {
		for _, m := range s.Messages(bob) {
			if strings.HasPrefix(m.Text, "Refused:") || strings.HasPrefix(m.Text, "Approved with your code") {
				said = m
				return true
			}
		}
		return false
	})
	if !strings.Contains(said.Text, "asks a second factor (passkey)") {
		t.Fatalf("answer %q: want the code refused, the passkey asked", said.Text)
	}
	r.replyContaining(bob, passkeyPromptMark+"Approval "+a.ID)
	if got, _ := r.j.Approval(context.Background(), a.ID); got.Decision != journal.Pending || len(got.Votes) != 0 {
		t.Errorf("after the code: %+v, want nothing recorded", got)
	}
	if err := r.j.UseTOTP(context.Background(), policy.UserID(bob), code); err != nil {
		t.Errorf("the code after its refusal = %v, want it unspent", err)
	}
	if n := len(r.srv.Messages(target)); n != 0 {
		t.Errorf("sent %d, want 0", n)
	}
}

// A card the bot shows for an approval another process asked under a policy
// that asked no factor (an agent's `countersign mcp` with -policies of its
// own) says the passkey the bot's policy asks, and a tap on it prompts for
// the passkey: the card, like the prompt, shows the factor the operator
// asks now, not the one the approval record holds.
func TestACardOfAnotherProcesssApprovalSaysTheFactorAskedHere(t *testing.T) {
	t.Parallel()
	r := newRig(t, withReviewer(linker{}), withPolicy(func(p *policy.Policy) { askFactor(p, policy.FactorPasskey) }))
	p, err := policy.Load("../policies.yaml")
	if err != nil {
		t.Fatal(err)
	}
	p.Access = policy.Access{Operators: []policy.UserID{alice}, Approvers: []policy.UserID{alice, bob}}
	agent := rigtest.New(t, rigtest.Over(r.j), rigtest.Policy(p), rigtest.Sender(r.bot.Sender())).Operator
	ctx := context.Background()
	task, err := agent.StartTask(ctx, journal.Task{Surface: "mcp", Summary: "asked under no step_up"})
	if err != nil {
		t.Fatal(err)
	}
	res, err := agent.Call(ctx, task.ID, operator.Call{Tool: "commit_send_message", Args: json.RawMessage(`{"chat_id":"222","text":"from an agent"}`)})
	if err != nil || res.Status != action.StatusPending {
		t.Fatalf("the agent's call = %+v, %v; want pending", res, err)
	}
	a, err := r.j.LatestApproval(ctx, res.OperationID)
	if err != nil || a.StepUp != policy.NoFactor {
		t.Fatalf("approval %+v, %v; want one asking no factor", a, err)
	}
	card := r.cardFor(bob, res.OperationID)
	if !strings.Contains(card.Text, "Second factor: passkey") {
		t.Errorf("card = %q, want the passkey the bot's policy asks", card.Text)
	}
	r.tap(bob, card, "Approve")
	if prompt := r.factorPrompt(bob, a.ID); !strings.HasPrefix(prompt.Text, passkeyPromptMark) {
		t.Errorf("prompt %q: want the passkey's", prompt.Text)
	}
	if got, _ := r.j.Approval(ctx, a.ID); got.Decision != journal.Pending || len(got.Votes) != 0 || len(r.srv.Messages(target)) != 0 {
		t.Errorf("after the tap: %+v, want nothing recorded or sent", got)
	}
}
