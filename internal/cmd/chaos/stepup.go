package main

import (
	"context"
	"fmt"
	"os/exec"
	"regexp"
	"slices"
	"strconv"
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
// a code they gave before that the bot used (a replay, which must approve
// nothing). Kills fall anywhere, between the tap and the code too. Until a
// replay was seen refused, the schedule sends to stepUpChat and answers its
// cards with codes, so that every run tries both a code and a replay.

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
	// given keeps every fresh code given, per person, for a replay; freshFor
	// the approvals each person gave a fresh code for.
	given    map[policy.UserID][]givenCode
	freshFor map[voter]bool
	// replays are the used codes given again, each to be refused; waiting,
	// per person, the one the run waits to see refused in the journal before
	// that person gives another code, or anyone a code for its approval.
	replays []*replay
	waiting map[policy.UserID]*replay
	// tapped is when each card was last tapped for a code; prompted are the
	// operations a code prompt came for; answered the prompts answered, by
	// chat and message id.
	tapped   map[tapKey]time.Time
	prompted map[string]bool
	answered map[[2]int64]bool
	// committed says a send to stepUpChat was seen committed; looked is
	// when the journal was last read for one.
	committed bool
	looked    time.Time
}

// givenCode is a fresh code given, and the time step it is of.
type givenCode struct {
	code string
	step int64
}

// voter is a person's part in an approval.
type voter struct {
	who      policy.UserID
	approval string
}

// replay is a code given again: by whom, for which approval, of which time
// step (one the bot had used already, so that it must refuse it), when, the
// person's wrong codes in a row in the journal before it, and whether the
// journal then counted it wrong (refused).
type replay struct {
	who      policy.UserID
	approval string
	step     int64
	at       time.Time
	wrong    int
	refused  bool
}

// replayProved reports whether the run saw a used code given again and
// refused: until it has, prompts are answered with replays whenever one can be.
func (c *codes) replayProved() bool {
	for _, r := range c.replays {
		if r.refused {
			return true
		}
	}
	return false
}

// proved reports whether the run saw both a used code refused and a commit
// to stepUpChat go out (with its codes, which an invariant checks): until it
// has, the schedule sends to stepUpChat and answers its cards with codes, so
// that no run passes the step-up invariants untried. A run with a full disk
// and kills could see every coded send of its first rounds expire.
func (c *codes) proved() bool { return c.committed && c.replayProved() }

// held reports whether a replay on approval waits to be seen refused: a code
// for it from anyone else could decide it first, and the replay would then be
// refused as too late, never tried.
func (c *codes) held(approval string) bool {
	for _, r := range c.waiting {
		if r.approval == approval {
			return true
		}
	}
	return false
}

// keyLine is where `countersign approver totp` prints the key, once.
var keyLine = regexp.MustCompile(`type the key by hand \(time-based, 6 digits, 30 seconds\): ([A-Z2-7]+)`)

// enrol enrols both people's TOTP factor with the bot binary beside the
// (stopped) bot, and keeps their keys.
func (w *world) enrol() error {
	w.codes = &codes{secret: map[policy.UserID]string{}, last: map[policy.UserID]int64{}, given: map[policy.UserID][]givenCode{},
		freshFor: map[voter]bool{}, waiting: map[policy.UserID]*replay{}, tapped: map[tapKey]time.Time{}, prompted: map[string]bool{}, answered: map[[2]int64]bool{}}
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
// and the prompt) is tapped again, promptWait after its last tap: every tap
// brings a prompt, and a tap each round would queue prompts behind the chat's
// send limit faster than it lets them out, and every card of the chat with them.
func (w *world) tapCoded(s *seen, chat int64, card telegramtest.Message) {
	op := opPattern.FindString(card.Text)
	if w.codes.prompted[op] {
		return // prompted already: its answer is answerPrompts'
	}
	delete(s.cards, card.MessageID) // looked at again until its prompt comes
	key := tapKey{chat, op}
	if at, ok := w.codes.tapped[key]; ok && time.Since(at) < promptWait {
		return
	}
	w.codes.tapped[key] = time.Now()
	w.note("step-up: approve tapped, a code asked")
	w.srv.PushCallbackQuery(chat, chat, card.MessageID, approveData(card, true))
}

// promptWait is how long a tap's code prompt is waited for before the card
// is tapped again: past a few sends of the chat, at about one a second.
const promptWait = 10 * time.Second

// tapKey is an operation's card in one chat.
type tapKey struct {
	chat int64
	op   string
}

// approvalPattern finds the approval a code prompt names.
var approvalPattern = regexp.MustCompile(`Approval (ap-[a-z0-9]+)`)

// replayWait bounds the wait to see a replay refused in the journal: one the
// journal shows nothing of by then (a kill took the update, the approval was
// decided or expired meanwhile) was not tried, and holds nothing up longer.
const replayWait = 5 * time.Second

// answerPrompts answers each code prompt of the bot not answered yet: with a
// fresh code of the person's key, or with a code they gave before that the
// bot has used already (replayUsed), which it must refuse. A prompt for which
// no fresh code can be made yet (one per time step, and the next step's at
// most), or that a replay holds up (held), is answered in a later round.
func (w *world) answerPrompts() {
	c := w.codes
	type prompt struct {
		chat     int64
		m        telegramtest.Message
		approval string
	}
	var open []prompt
	for _, chat := range []int64{operator, approver} {
		for _, m := range w.srv.Messages(chat) {
			if !strings.HasPrefix(m.Text, "🔐 Approval ") {
				continue
			}
			c.prompted[opPattern.FindString(m.Text)] = true
			if ap := approvalPattern.FindStringSubmatch(m.Text); ap != nil && !c.answered[[2]int64{chat, int64(m.MessageID)}] {
				open = append(open, prompt{chat, m, ap[1]})
			}
		}
	}
	look := !c.committed && time.Since(c.looked) > time.Second
	if len(open) == 0 && len(c.waiting) == 0 && !look {
		return // the journal is read only when there is a prompt, a replay or a commit to see to
	}
	j, done, err := w.openJournal()
	if err != nil {
		return // answered in a later round
	}
	defer done()
	ctx := context.Background()
	w.settleReplays(ctx, j)
	if !c.committed {
		c.looked = time.Now()
		ops, err := j.Operations(ctx, journal.Filter{Target: strconv.FormatInt(stepUpChat, 10), States: []journal.State{journal.Committed}, Limit: 1})
		c.committed = err == nil && len(ops) > 0
	}
	for _, p := range open {
		who := policy.UserID(p.chat)
		if c.waiting[who] != nil || c.held(p.approval) {
			continue
		}
		key := [2]int64{p.chat, int64(p.m.MessageID)}
		if w.replayUsed(ctx, j, p.chat, p.m, p.approval) {
			c.answered[key] = true
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
		c.last[who], c.given[who] = step, append(c.given[who], givenCode{code, step})
		c.freshFor[voter{who, p.approval}] = true
		w.note("step-up: a fresh code")
		w.srv.PushReply(p.chat, p.chat, p.m.MessageID, code)
	}
}

// replayUsed answers prompt m, of approval apID in chat, with a code its
// person gave before, of a time step no later than the last the bot used for
// them: a code the bot must refuse, whichever it is, and whatever became of
// the fresh codes given since. It does so while the run has seen no replay
// refused (proved), then one time in four; only for an approval still
// pending that its person has not voted on, which alone tries a code. It
// reports whether it did.
func (w *world) replayUsed(ctx context.Context, j *journal.Journal, chat int64, m telegramtest.Message, apID string) bool {
	c := w.codes
	who := policy.UserID(chat)
	if len(c.given[who]) == 0 || c.replayProved() && w.rnd.IntN(4) != 0 {
		return false
	}
	f, err := j.TOTP(ctx, who)
	if err != nil || f.Locked(time.Now()) {
		return false
	}
	if a, err := j.Approval(ctx, apID); err != nil || a.Decision != journal.Pending || slices.ContainsFunc(a.Votes, func(v journal.Vote) bool { return v.By == who }) {
		return false // decided, or voted by who: the code would not be tried
	}
	var used []givenCode
	for _, g := range c.given[who] {
		if g.step <= f.LastStep {
			used = append(used, g)
		}
	}
	if len(used) == 0 {
		return false
	}
	g := used[w.rnd.IntN(len(used))]
	r := &replay{who: who, approval: apID, step: g.step, at: time.Now(), wrong: f.Wrong}
	c.replays, c.waiting[who] = append(c.replays, r), r
	w.note("step-up: a used code, given again")
	w.srv.PushReply(chat, chat, m.MessageID, g.code)
	return true
}

// settleReplays looks in the journal for the refusal of each replay that
// waits: the person's wrong codes in a row went up since it was given (their
// other codes wait meanwhile). One not seen refused within replayWait waits
// no longer; stepUpChecks tells whether it approved anything.
func (w *world) settleReplays(ctx context.Context, j *journal.Journal) {
	c := w.codes
	for who, r := range c.waiting {
		f, err := j.TOTP(ctx, who)
		switch {
		case err == nil && f.Wrong > r.wrong:
			r.refused = true
			w.note("step-up: a used code given again, refused")
		case time.Since(r.at) < replayWait:
			continue
		default:
			w.note("step-up: a used code given again, not seen refused")
		}
		delete(c.waiting, who)
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
	for _, op := range ops {
		a, err := j.LatestApproval(ctx, op.ID)
		if err != nil {
			continue // nothingUnapproved reports a commit without one
		}
		if op.State == journal.Committed || op.State == journal.Unknown {
			sent = append(sent, sentWith{op, a})
		}
	}
	held := stepUpHeld(sent)
	w.count["step-up: commits that went out with codes"] = held.withCodes
	approvals := map[string]journal.Approval{}
	for _, r := range w.codes.replays {
		if a, err := j.Approval(ctx, r.approval); err == nil {
			approvals[r.approval] = a
		}
	}
	return []Invariant{held.Invariant, replaysRefused(w.codes.replays, w.codes.freshFor, approvals)}
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

// replaysRefused: each used code given again approved nothing: the approval
// it was given for holds no vote of its person given with a code, unless they
// gave a fresh code for that approval too. Checked code by code, so that a
// fresh code that approved nothing (given to an approval decided meanwhile,
// or lost to a kill) cannot make room for a replay that did.
func replaysRefused(replays []*replay, freshFor map[voter]bool, approvals map[string]journal.Approval) Invariant {
	in := Invariant{Name: "every used code given again was refused: none approved what it was given for"}
	for _, r := range replays {
		if freshFor[voter{r.who, r.approval}] {
			continue
		}
		a, ok := approvals[r.approval]
		if !ok {
			in.Broken = append(in.Broken, fmt.Sprintf("approval %s, given user %d's used code again, is not in the journal to check", r.approval, r.who))
			continue
		}
		for _, v := range a.Votes {
			if v.By == r.who && v.StepUp == policy.FactorTOTP {
				in.Broken = append(in.Broken, fmt.Sprintf("user %d's code of step %d, used before, approved %s when given again", r.who, r.step, r.approval))
			}
		}
	}
	return in
}
