package main

import (
	"context"
	"fmt"
	"os/exec"
	"regexp"
	"strings"
	"time"

	"github.com/countersign/countersign/journal"
	"github.com/countersign/countersign/policy"
	"github.com/countersign/countersign/stepup"
	"github.com/countersign/countersign/telegram/telegramtest"
)

// A second factor in a run with the mix: sends to stepUpChat ask each
// approver a TOTP code beside the tap (policy step_up). Both people enrol
// with `countersign approver totp` on the machine before the first start, as
// a person would; a tap on such a card brings the bot's code prompt, which
// the person answers with a fresh code from their key, and now and then with
// a code they gave before (a replay, which must approve nothing). Kills fall
// anywhere, between the tap and the code too.

// stepUpChat is the target whose commits ask each approver a code.
const stepUpChat = firstChat + 1

// stepUpPolicy is the quorum rule that asks the code, under quorumPolicy's.
func stepUpPolicy() string {
	return fmt.Sprintf("  - chats: [\"%d\"]\n    step_up: totp\n", stepUpChat)
}

// codes are the people's TOTP keys and what the run gave with them.
type codes struct {
	secret map[policy.UserID]string
	// last is the last time step a fresh code was made for, per person: a
	// code approves once, so each fresh one is of a later step.
	last map[policy.UserID]int64
	// fresh counts the fresh codes given, per person; given keeps them all,
	// for a replay.
	fresh map[policy.UserID]int
	given map[policy.UserID][]string
	// prompted are the operations a code prompt came for; answered the
	// prompts answered, by chat and message id.
	prompted map[string]bool
	answered map[[2]int64]bool
}

// keyLine is where `countersign approver totp` prints the key, once.
var keyLine = regexp.MustCompile(`type the key by hand \(time-based, 6 digits, 30 seconds\): ([A-Z2-7]+)`)

// enrol enrols both people's TOTP factor with the bot binary beside the
// (stopped) bot, and keeps their keys.
func (w *world) enrol() error {
	w.codes = &codes{secret: map[policy.UserID]string{}, last: map[policy.UserID]int64{}, fresh: map[policy.UserID]int{}, given: map[policy.UserID][]string{},
		prompted: map[string]bool{}, answered: map[[2]int64]bool{}}
	for _, who := range []policy.UserID{operator, approver} {
		args := append(append([]string{"approver", "totp"}, w.enrolArgs()...), fmt.Sprint(who))
		cmd := exec.Command(w.cfg.Bot, args...)
		cmd.Env = w.childEnv()
		out, err := cmd.CombinedOutput()
		if err != nil {
			return fmt.Errorf("countersign approver totp %d: %v\n%s", who, err, out)
		}
		m := keyLine.FindSubmatch(out)
		if m == nil {
			return fmt.Errorf("countersign approver totp %d printed no key:\n%s", who, out)
		}
		w.codes.secret[who] = string(m[1])
	}
	return nil
}

// enrolArgs name the journal the factors go in: the bot's data folder, or
// the replicas' PostgreSQL journal.
func (w *world) enrolArgs() []string {
	if w.webhook() {
		return []string{"-journal", w.journal}
	}
	return []string{"-data", w.dir}
}

// asksCode reports whether card asks a code beside the tap.
func asksCode(card telegramtest.Message) bool {
	return strings.Contains(card.Text, "Second factor: TOTP")
}

// tapCoded taps Approve on card in chat, a card that asks a code: the bot
// answers with a code prompt, which answerPrompts answers in this round or a
// later one. A card whose prompt never came (the bot killed between the tap
// and the prompt) is tapped again in a later round.
func (w *world) tapCoded(s *seen, chat int64, card telegramtest.Message) {
	op := opPattern.FindString(card.Text)
	if w.codes.prompted[op] {
		return // prompted already: its answer is answerPrompts'
	}
	w.note("step-up: approve tapped, a code asked")
	w.srv.PushCallbackQuery(chat, chat, card.MessageID, approveData(card, true))
	delete(s.cards, card.MessageID) // looked at again until its prompt comes
}

// answerPrompts answers each code prompt of the bot not answered yet: with a
// fresh code of the person's key, or (one time in four, when there is one)
// with a code they gave before, which must approve nothing. A prompt for which
// no fresh code can be made yet (one per time step, and the next step's at
// most) is answered in a later round.
func (w *world) answerPrompts() {
	c := w.codes
	for _, chat := range []int64{operator, approver} {
		who := policy.UserID(chat)
		for _, m := range w.srv.Messages(chat) {
			key := [2]int64{chat, int64(m.MessageID)}
			if !strings.HasPrefix(m.Text, "🔐 Approval ") {
				continue
			}
			c.prompted[opPattern.FindString(m.Text)] = true
			if c.answered[key] {
				continue
			}
			if len(c.given[who]) > 0 && w.rnd.IntN(4) == 0 {
				c.answered[key] = true
				w.note("step-up: a code given before, replayed")
				w.srv.PushReply(chat, chat, m.MessageID, c.given[who][w.rnd.IntN(len(c.given[who]))])
				continue
			}
			now := stepup.Step(time.Now())
			step := max(now, c.last[who]+1)
			if step > now+1 {
				continue // no fresh code this time step: a later round answers it
			}
			code, err := stepup.CodeAt(c.secret[who], step)
			if err != nil {
				w.note("step-up: no code made: " + err.Error())
				continue
			}
			c.answered[key] = true
			c.last[who], c.fresh[who], c.given[who] = step, c.fresh[who]+1, append(c.given[who], code)
			w.note("step-up: a fresh code")
			w.srv.PushReply(chat, chat, m.MessageID, code)
		}
	}
}

// sentWith is an operation that may have reached Telegram and the approval it
// went under, for the step-up invariants.
type sentWith struct {
	op journal.Operation
	a  journal.Approval
}

// stepUpChecks are the step-up invariants over what the journal holds.
func (w *world) stepUpChecks(ctx context.Context, j *journal.Journal, ops []journal.Operation) []Invariant {
	var sent []sentWith
	votes := map[policy.UserID]int{}
	for _, op := range ops {
		a, err := j.LatestApproval(ctx, op.ID)
		if err != nil {
			continue // nothingUnapproved reports a commit without one
		}
		for _, v := range a.Votes {
			if v.StepUp == policy.FactorTOTP {
				votes[v.By]++
			}
		}
		if op.State == journal.Committed || op.State == journal.Unknown {
			sent = append(sent, sentWith{op, a})
		}
	}
	held := stepUpHeld(sent)
	w.count["step-up: commits that went out with codes"] = held.withCodes
	return []Invariant{held.Invariant, codesWithin(votes, w.codes.fresh)}
}

// stepUpResult is stepUpHeld's invariant and how many commits it found
// that asked codes: a run with none proves nothing.
type stepUpResult struct {
	Invariant
	withCodes int
}

// stepUpHeld: no commit to stepUpChat went out without the votes its policy
// asks each given with a code.
func stepUpHeld(sent []sentWith) stepUpResult {
	r := stepUpResult{Invariant: Invariant{Name: "no commit to the step-up chat without votes given with a code"}}
	for _, s := range sent {
		if s.op.Payload.Target != fmt.Sprint(stepUpChat) {
			continue
		}
		r.withCodes++
		if len(s.a.Votes) == 0 || s.a.Decision != journal.DecideApprove {
			r.Broken = append(r.Broken, fmt.Sprintf("%s went out to %d with no vote given with a code (%s, decided by %d)", s.op.ID, stepUpChat, s.a.Decision, s.a.DecidedBy))
			continue
		}
		for _, v := range s.a.Votes {
			if v.StepUp != policy.FactorTOTP {
				r.Broken = append(r.Broken, fmt.Sprintf("%s went out to %d on a vote of %d given without a code", s.op.ID, stepUpChat, v.By))
			}
		}
	}
	return r
}

// codesWithin: no person's codes approved more often than fresh codes were
// given them; a replayed code approved nothing.
func codesWithin(votes, fresh map[policy.UserID]int) Invariant {
	in := Invariant{Name: "no person's codes approved more often than fresh codes were given (a replayed code approves nothing)"}
	for who, n := range votes {
		if n > fresh[who] {
			in.Broken = append(in.Broken, fmt.Sprintf("user %d's codes approved %d times, and %d fresh codes were given", who, n, fresh[who]))
		}
	}
	return in
}
