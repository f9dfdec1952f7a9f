package main

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"syscall"
	"time"

	"github.com/countersign/countersign/action"
	"github.com/countersign/countersign/journal"
	"github.com/countersign/countersign/telegram/telegramtest"
)

// dumpStuck asks every live bot process of a stalled wind-down for its
// goroutines (SIGQUIT: Go prints them to its log and exits), and keeps each
// log in a folder that outlives the run, named in the output: what a stuck
// operation waits for is in there, and nowhere else once the run is gone.
func (w *world) dumpStuck() {
	dir, err := os.MkdirTemp("", "countersign-chaos-stuck-")
	if err != nil {
		return
	}
	var quit []*replica
	for _, r := range w.reps {
		if r.up && r.cmd != nil && r.cmd.Process != nil && r.cmd.Process.Signal(syscall.SIGQUIT) == nil {
			quit = append(quit, r)
		}
	}
	for _, r := range quit {
		select { // its goroutines are written when it exits
		case err := <-r.exit:
			r.up = false
			r.exit <- err // for the stop that comes after
		case <-time.After(10 * time.Second):
		}
	}
	for _, r := range w.reps {
		if b, err := os.ReadFile(r.log.Name()); err == nil {
			os.WriteFile(filepath.Join(dir, r.name+".log"), b, 0o600)
		}
	}
	fmt.Fprintf(w.out, "chaos: the stalled processes' goroutines and logs are kept in %s\n", dir)
}

// tick is the pace of the schedule: one round of decisions.
const tick = 60 * time.Millisecond

// storm issues the sends, faults, taps, strangers, side commands and kills of the
// run until its duration is over.
func (w *world) storm(ctx context.Context, policies string) {
	start := time.Now()
	deadline := start.Add(w.cfg.Duration)
	every := w.cfg.Duration / time.Duration(w.cfg.Kills+1)
	nextKill, kills := start.Add(every), 0
	sendEvery := w.cfg.Duration * 8 / 10 / time.Duration(w.cfg.Ops)
	nextSend, sent := start, 0
	seen := newSeen()
	// A kill made late (a /retry killed mid-send takes seconds) is still made: the
	// run makes the kills it was asked for.
	// The database's disturbances are made too, a cut lasting as long as drawn.
	for (time.Now().Before(deadline) || kills < w.cfg.Kills || w.disturbing()) && ctx.Err() == nil {
		now := time.Now()
		if w.lb != nil {
			w.reap()
			w.disturbDatabase(ctx, start, now)
			if err := w.restartDue(false); err != nil {
				fmt.Fprintf(w.out, "chaos: restart: %v\n", err)
				return
			}
		}
		switch {
		case kills < w.cfg.Kills && now.After(nextKill) && w.lb != nil:
			if w.replicaKill() {
				kills++
				nextKill = nextKill.Add(every)
				if w.agents != nil {
					w.agents.afterRestart(w.down()...) // a caller on a killed replica finds it gone, and moves on
				}
			}
		case kills < w.cfg.Kills && now.After(nextKill):
			if w.disk != nil && w.disk.isFull() {
				w.note("full disk: space returns before the kill")
				w.disk.free()
			}
			renumber := w.rnd.IntN(2) == 0
			if renumber {
				w.underTheKill() // updates the bot may have read and not confirmed
			}
			if w.agents != nil && w.rnd.IntN(3) == 0 {
				w.mcpUnderTheKill(kills)
			}
			w.note("kill -9 and restart")
			w.killReplica(w.reps[0])
			w.verifyAudit(fmt.Sprintf("after kill %d", kills+1), false)
			if w.rnd.IntN(2) == 0 {
				w.beside() // while the bot is down
			}
			if renumber {
				w.renumber()
			}
			if err := w.startReplica(w.reps[0]); err != nil {
				fmt.Fprintf(w.out, "chaos: restart: %v\n", err)
				return
			}
			if w.agents != nil {
				w.agents.afterRestart()
			}
			kills++
			nextKill = nextKill.Add(every)
		}
		if sent < w.cfg.Ops && now.After(nextSend) {
			// Drawn only with the mix in: a run with -actions 0 makes the schedule
			// it made before there was one.
			action := w.mix != nil && w.rnd.Float64() < w.cfg.Actions
			r := w.rnd.Float64()
			switch {
			case w.tryingStepUp(sent):
				w.note("step-up: a send to try the second factor")
				w.sendCommand(stepUpChat, fmt.Sprintf("chaos %d send %d", w.cfg.Seed, sent), false)
			case action:
				w.action(sent)
			case w.model != nil && r < w.cfg.ModelShare:
				w.note("plain text for a model turn")
				w.sendCommand(w.target(), fmt.Sprintf("chaos %d model %d", w.cfg.Seed, sent), true)
			case w.agents != nil && r < w.cfg.ModelShare+w.cfg.MCPShare:
				i := w.rnd.IntN(len(w.agents.callers))
				w.note("send by an MCP caller")
				w.agents.send(i, w.target(), fmt.Sprintf("chaos %d mcp %d", w.cfg.Seed, sent))
			default:
				w.sendCommand(w.target(), fmt.Sprintf("chaos %d send %d", w.cfg.Seed, sent), false)
			}
			sent++
			nextSend = nextSend.Add(sendEvery)
		}
		w.fillOrFree(now, start, nextKill)
		w.disturb()
		w.decide(seen, false)
		time.Sleep(tick)
	}
	if w.disk != nil && w.disk.isFull() {
		w.note("full disk: space returns")
		w.disk.free()
	}
	if w.lb != nil {
		w.heal()
		w.reap()
		if err := w.restartDue(true); err != nil {
			fmt.Fprintf(w.out, "chaos: restart: %v\n", err)
		}
	}
}

// fillOrFree fills the data folder's disk now and then, for 2 to 5 s, never
// across a kill, and at least once by the middle of the run; and frees it when
// its time is up.
func (w *world) fillOrFree(now, start, nextKill time.Time) {
	if w.disk == nil {
		return
	}
	if w.disk.isFull() {
		if now.After(w.fullUntil) {
			w.note("full disk: space returns")
			w.disk.free()
		}
		return
	}
	hold := time.Duration(2000+w.rnd.IntN(3000)) * time.Millisecond
	due := w.count["full disk"] == 0 && now.Sub(start) > w.cfg.Duration/2
	if (w.rnd.IntN(40) == 0 || due) && nextKill.Sub(now) > hold+time.Second {
		w.note("full disk")
		if err := w.disk.fill(); err != nil {
			fmt.Fprintf(w.out, "chaos: fill the disk: %v\n", err)
		}
		w.fullUntil = now.Add(hold)
	}
}

// underTheKill leaves Telegram holding updates the bot read and did not
// confirm: an operator's update is pushed (half a message delivered again, half
// a fresh /ops), and the poll after it, which would confirm it, is held until the
// kill. The bot may have stored it, handled it, or neither.
func (w *world) underTheKill() {
	w.srv.Inject(telegramtest.Delay(3 * time.Second).For("getUpdates").Times(1))
	polls := len(w.srv.CallsTo("getUpdates"))
	w.mu.Lock()
	var c command
	if len(w.commands) > 0 {
		c = w.commands[len(w.commands)-1-w.rnd.IntN(min(len(w.commands), 5))]
	}
	w.mu.Unlock()
	if c.text != "" && w.rnd.IntN(2) == 0 {
		w.note("update delivered again just before the kill")
		w.push(c)
	} else {
		w.note("/ops just before the kill")
		w.srv.PushMessage(operator, operator, "/ops")
	}
	w.srv.WaitTimeout(2*time.Second, func(s *telegramtest.Server) bool { return len(s.CallsTo("getUpdates")) > polls })
}

// renumber, while the bot is down, has Telegram number afresh, low, what it still
// holds: the bot sees the same messages and taps again under ids it never saw.
func (w *world) renumber() {
	ids := w.srv.RenumberPending(int64(1 + w.rnd.IntN(50)))
	w.note("renumbered update ids while the bot was down")
	w.count["updates held at the kill, renumbered"] += len(ids)
}

// windDown stops the faults and answers everything still open, truthfully, until
// nothing waits, or a minute and a half passes.
func (w *world) windDown(ctx context.Context, policies string) {
	w.srv.ClearFaults()
	if w.model != nil {
		w.model.quiet()
	}
	seen := newSeen()
	start := time.Now()
	// Cards and replies queue behind each chat's send limit (about one a second),
	// and a loaded machine is slower still: the wind-down waits as long as work
	// moves, and gives up only after a long spell in which nothing did, which is a
	// stuck operation, never a slow one.
	const stuck = 60 * time.Second
	last, moved, still := "", time.Now(), ""
	for time.Since(moved) < stuck && ctx.Err() == nil {
		if w.db != nil {
			w.reap() // a replica that lost its name lock late exits now
			if err := w.restartDue(false); err != nil {
				fmt.Fprintf(w.out, "chaos: restart: %v\n", err)
			}
		}
		w.decide(seen, true)
		open, ok := w.open()
		var turns []string
		if w.model != nil {
			turns = w.model.busy()
		}
		idle, calls := true, 0
		if w.agents != nil {
			idle, calls = w.agents.idle()
		}
		if ok && len(open) == 0 && len(w.srv.PendingUpdates()) == 0 && len(turns) == 0 && idle {
			return
		}
		still = fmt.Sprintf("operations %v, updates %v, model turns %v, MCP callers idle %v", open, w.srv.PendingUpdates(), turns, idle)
		// What moves: operations, messages, updates, model requests (never the
		// polls, which go on whatever happens).
		now := fmt.Sprint(open, len(w.srv.AllMessages()), w.srv.PendingUpdates(), calls)
		if w.model != nil {
			now += fmt.Sprint(len(w.model.srv.Requests()))
		}
		if now != last {
			last, moved = now, time.Now()
		}
		if time.Since(start) > 10*time.Second {
			w.resolveByHand() // what no notice reached: the follow-up session's CLI
		}
		time.Sleep(4 * tick)
	}
	fmt.Fprintf(w.out, "chaos: the wind-down saw nothing move for %s with work still open: %s\n", stuck, still)
	w.dumpStuck()
	if w.lb != nil {
		ds := w.srv.WebhookDeliveries()
		fmt.Fprintf(w.out, "chaos: the last webhook deliveries: %+v\n", ds[max(0, len(ds)-5):])
	}
}

// resolveByHand resolves, truthfully, with countersign vault resolve beside the bot, the
// unknown outcomes still open: a person at a terminal instead of a phone.
func (w *world) resolveByHand() {
	j, done, err := w.openJournal()
	if err != nil {
		return
	}
	ops, _ := j.Operations(context.Background(), journal.Filter{States: []journal.State{journal.Unknown}})
	done()
	for _, op := range ops {
		arrived, ok := w.arrived(op.ID)
		if !ok {
			continue
		}
		answer := map[bool]string{true: "delivered", false: "not_delivered"}[arrived]
		w.note("countersign vault resolve " + answer + " beside the bot")
		args := append(append([]string{"vault", "resolve"}, w.dataArgs()...), "-policies", w.policies, "-by", "chaos", op.ID, answer)
		cmd := exec.Command(w.cfg.Bot, args...)
		cmd.Env = w.childEnv()
		out, err := cmd.CombinedOutput()
		if err != nil {
			fmt.Fprintf(w.out, "chaos: countersign vault resolve %s: %v\n%s", op.ID, err, out)
		}
	}
}

// tryingStepUp reports whether send number sent goes to stepUpChat to try
// the second factor: the first two (a code that approves, then a card whose
// prompt gets that code again) and every third after them, until a replay was
// seen refused. Left to the draw of target, a short run with kills and a full
// disk could end with neither tried, and its step-up invariants held untried.
func (w *world) tryingStepUp(sent int) bool {
	return w.codes != nil && w.cfg.Chats > 1 && !w.codes.proved() && (sent < 2 || sent%3 == 0)
}

// target picks a chat to send to: mostly ones that need a tap, some auto-approved.
func (w *world) target() int64 {
	if w.rnd.IntN(5) == 0 {
		return int64(autoChat + w.rnd.IntN(autoChats))
	}
	if w.codes != nil && w.cfg.Chats > 1 && w.rnd.IntN(5) == 0 {
		return stepUpChat // a code asked: a run without one proves nothing of it
	}
	return int64(firstChat + w.rnd.IntN(w.cfg.Chats))
}

// disturb injects at most one fault or disturbance this tick.
func (w *world) disturb() {
	r := w.rnd.Float64()
	chat := w.target()
	switch {
	case r < 0.015:
		w.fault("429 retry_after 1", telegramtest.TooManyRequests(1), chat)
	case r < 0.025:
		w.fault("500", telegramtest.ErrorReply(500, ""), chat)
	case r < 0.035:
		w.fault("502", telegramtest.BadGateway(), chat)
	case r < 0.045:
		w.fault("dropped before accepted", telegramtest.DropBeforeAccept(), chat)
	case r < 0.055:
		w.fault("dropped after accepted", telegramtest.AcceptThenDrop(), chat)
	case r < 0.065:
		w.fault("slow answer", telegramtest.Delay(1500*time.Millisecond), chat)
	case r < 0.068:
		w.fault("hung answer", telegramtest.AcceptThenHang(), chat)
	case r < 0.085:
		w.mu.Lock()
		var c command
		if len(w.commands) > 0 {
			c = w.commands[w.rnd.IntN(len(w.commands))]
		}
		w.mu.Unlock()
		switch {
		case c.text == "":
		case w.lb != nil && w.rnd.IntN(2) == 0:
			w.webhookFault()
		default:
			w.note("update delivered twice")
			w.push(c)
		}
	case r < 0.095:
		w.note("stranger's command")
		w.srv.PushMessage(stranger, stranger, fmt.Sprintf("/send %d from a stranger", chat))
	case r < 0.105:
		if cards := w.openCards(operator); len(cards) > 0 {
			w.note("stranger's tap")
			c := cards[w.rnd.IntN(len(cards))]
			w.srv.PushCallbackQuery(stranger, operator, c.MessageID, approveData(c, true))
		}
	case r < 0.115:
		w.beside()
	}
}

func (w *world) fault(name string, f telegramtest.Fault, chat int64) {
	w.note("fault: " + name)
	w.srv.Inject(f.For("sendMessage").InChat(chat))
}

// besideCommands are the commands that may run beside the bot, each with the
// one of dataArgs' flags it does not take: ops reads the journal, vault the
// vault.
var besideCommands = []struct {
	args   []string
	unread string
}{{[]string{"ops", "list"}, "-vault"}, {[]string{"vault", "list"}, "-journal"}}

// beside runs a command that may run beside the bot.
func (w *world) beside() {
	c := besideCommands[w.rnd.IntN(len(besideCommands))]
	args := c.args
	w.note("bot " + args[0] + " " + args[1] + " beside the bot")
	where := w.dataArgs()
	if i := slices.Index(where, c.unread); i >= 0 {
		where = slices.Delete(where, i, i+2)
	}
	cmd := exec.Command(w.cfg.Bot, append(slices.Clone(args), where...)...)
	cmd.Env = w.childEnv()
	if out, err := cmd.CombinedOutput(); err != nil {
		w.note("beside command failed")
		fmt.Fprintf(w.out, "chaos: bot %s: %v\n%s", strings.Join(args, " "), err, out)
	}
}

// autoApproved reports whether op's target is one the run's auto_approve rule
// covers: a /retry of it commits at once, within the handling of the /retry.
func autoApproved(op journal.Operation) bool {
	var chat int64
	fmt.Sscan(op.Payload.Target, &chat)
	return chat >= autoChat && chat < autoChat+autoChats
}

// approveOnce waits (up to 10 s) for the operator's card of operation id, and
// approves it.
func (w *world) approveOnce(s *seen, id string) {
	var card telegramtest.Message
	found := func(*telegramtest.Server) bool {
		for _, c := range w.openCards(operator) {
			if !s.cards[c.MessageID] && strings.Contains(c.Text, id) {
				card = c
				return true
			}
		}
		return false
	}
	if w.srv.WaitTimeout(10*time.Second, found) != nil {
		return
	}
	s.cards[card.MessageID] = true
	w.note("approve")
	w.srv.PushCallbackQuery(operator, operator, card.MessageID, approveData(card, true))
}

// seen keeps what the run already answered, so that each card and notice is
// decided once (double taps are made on purpose, not by accident).
type seen struct {
	cards, notices map[int]bool
	ops            map[string]bool // operations verified not delivered, followed up
}

func newSeen() *seen {
	return &seen{cards: map[int]bool{}, notices: map[int]bool{}, ops: map[string]bool{}}
}

// decide answers new cards (approve mostly, some rejected, some left to expire;
// closing, every one is rejected) and new unknown-outcome notices (truthfully,
// from what the fake Telegram holds), and retries or cancels what was verified
// not delivered.
func (w *world) decide(s *seen, closing bool) {
	for _, chat := range []int64{operator, approver} {
		for _, c := range w.openCards(chat) {
			if s.cards[c.MessageID] {
				continue
			}
			s.cards[c.MessageID] = true
			r := w.rnd.Float64()
			switch {
			case closing:
				w.note("closing: reject what is left")
				w.srv.PushCallbackQuery(chat, chat, c.MessageID, approveData(c, false))
			case w.codes != nil && asksCode(c) && (r < 0.85 || !w.codes.proved()):
				w.tapCoded(s, chat, c)
			case r < 0.70:
				w.note("approve")
				w.srv.PushCallbackQuery(chat, chat, c.MessageID, approveData(c, true))
				if w.rnd.IntN(8) == 0 {
					w.note("double tap")
					w.srv.PushCallbackQuery(chat, chat, c.MessageID, approveData(c, true))
				}
			case w.mix != nil && r > 0.95 && w.amend(chat, c):
				// corrected before anyone decided: its new card comes next
			case r < 0.82:
				w.note("reject")
				w.srv.PushCallbackQuery(chat, chat, c.MessageID, approveData(c, false))
			default:
				w.note("left to expire")
			}
		}
	}
	if w.codes != nil && !closing {
		w.answerPrompts()
	}
	for _, n := range w.notices() {
		if s.notices[n.MessageID] {
			continue
		}
		s.notices[n.MessageID] = true
		op := opPattern.FindString(n.Text)
		arrived, ok := w.arrived(op)
		if !ok {
			continue
		}
		w.note(fmt.Sprintf("resolved from the phone (arrived: %v)", arrived))
		answer := map[bool]string{true: "d", false: "n"}[arrived]
		w.srv.PushCallbackQuery(operator, operator, n.MessageID, "rs1:"+op+":"+answer)
	}
	w.followUp(s, closing)
}

// followUp retries or cancels, from the phone, operations verified not delivered.
func (w *world) followUp(s *seen, closing bool) {
	j, done, err := w.openJournal()
	if err != nil {
		return
	}
	ops, _ := j.Operations(context.Background(), journal.Filter{States: []journal.State{journal.NotDelivered}})
	var underKill []journal.Operation
	for _, op := range ops {
		if s.ops[op.ID] {
			continue
		}
		s.ops[op.ID] = true
		switch {
		case !closing && w.rnd.IntN(2) == 0 && w.rnd.IntN(2) == 0 && op.Tool == "commit_send_message":
			underKill = append(underKill, op) // after the journal is closed
		case !closing && w.rnd.IntN(2) == 0:
			w.note("/retry from the phone")
			w.srv.PushMessage(operator, operator, "/retry "+op.ID)
		default:
			w.note("/cancel from the phone")
			w.srv.PushMessage(operator, operator, "/cancel "+op.ID)
		}
	}
	done()
	for _, op := range underKill {
		w.retryUnderTheKill(s, op)
	}
}

// retryUnderTheKill sends /retry for an operation verified not delivered (and
// approves its card, where it needs one), has Telegram take the message and never
// answer, and kills the bot while it waits. After the restart the retry's outcome
// is unknown (it did arrive), an update whose handling never finished (the /retry,
// which commits at once in an auto-approved chat) is taken again from the inbox,
// and the note of the first unknown, resolved not delivered, is still in the
// vault: nothing may take that old answer for the new attempt and send it again.
func (w *world) retryUnderTheKill(s *seen, op journal.Operation) {
	var chat int64
	fmt.Sscan(op.Payload.Target, &chat)
	if w.disk != nil && w.disk.isFull() {
		w.note("full disk: space returns before the kill")
		w.disk.free()
	}
	w.note("/retry from the phone, killed while its send hangs")
	w.srv.Inject(telegramtest.AcceptThenHang().For("sendMessage").InChat(chat))
	w.srv.PushMessage(operator, operator, "/retry "+op.ID)
	if !autoApproved(op) {
		w.approveOnce(s, op.ID)
	}
	took := func(s *telegramtest.Server) bool {
		for _, m := range s.Messages(chat) {
			if m.RawText == op.Payload.Text && m.ReplyLost {
				return true
			}
		}
		return false
	}
	if w.srv.WaitTimeout(10*time.Second, took) != nil {
		w.note("/retry killed before its send was taken")
	}
	if w.lb != nil {
		// The replica that sends it dies; the others carry on, and it comes back
		// after a moment.
		if r := w.sender(chat, op.Payload.Text); r != nil && len(w.live()) > 1 {
			w.killReplica(r)
			down := w.downtime(w.rnd)
			if down > 10*time.Second && len(w.live()) > 1 {
				w.note("a replica down past its lease")
			} else {
				down = min(down, 3*time.Second)
			}
			r.back = time.Now().Add(down)
		} else {
			w.note("/retry's sender not found, or the last one running: not killed")
		}
		return
	}
	w.killReplica(w.reps[0])
	if err := w.startReplica(w.reps[0]); err != nil {
		fmt.Fprintf(w.out, "chaos: restart: %v\n", err)
	}
}

// mcpUnderTheKill has an HTTP caller commit to a chat an auto_approve rule
// covers (the bot runs the commit within the call), Telegram take the message and
// never answer, and leaves the kill to cut the call: the agent does not know
// whether its commit was journaled, and either finds it in list_pending or calls
// again in a new session. The second call is a second operation, by design: the
// operation cut is unknown (it did arrive), and the new one is approved by the
// rule and sent.
func (w *world) mcpUnderTheKill(n int) {
	chat := int64(autoChat + w.rnd.IntN(autoChats))
	text := fmt.Sprintf("chaos %d mcp %d cut", w.cfg.Seed, n)
	w.note("MCP commit over HTTP, killed while its send hangs")
	w.srv.Inject(telegramtest.AcceptThenHang().For("sendMessage").InChat(chat))
	w.agents.send(stdioAgents+w.rnd.IntN(httpAgents), chat, text)
	took := func(s *telegramtest.Server) bool {
		for _, m := range s.Messages(chat) {
			if m.RawText == text && m.ReplyLost {
				return true
			}
		}
		return false
	}
	if w.srv.WaitTimeout(10*time.Second, took) != nil {
		w.note("MCP commit killed before its send was taken")
	}
}

var opPattern = regexp.MustCompile(`op-[a-z0-9]{6}`)

// arrived says whether operation id's message is in its target chat, as the
// person checking their phone would see; ok is false when the journal cannot say.
// A text is one operation's, except where an MCP caller, not knowing whether its
// cut commit was journaled, asked again: then the messages the other operations
// of the text account for (committed ones, by their evidence or their count) are
// not this one's, and among unknown ones a message is the one whose attempt was
// out when Telegram took it.
func (w *world) arrived(id string) (bool, bool) {
	j, done, err := w.openJournal()
	if err != nil {
		return false, false
	}
	defer done()
	op, err := j.Operation(context.Background(), id)
	if err != nil {
		return false, false
	}
	if a := op.Payload.Action; a != "" && a != action.SendMessage && a != action.PublishPost {
		return w.arrivedOther(j, op)
	}
	msgs := len(w.messagesOf(op))
	if msgs == 0 || !strings.Contains(op.Payload.Text, " mcp ") {
		return msgs > 0, true
	}
	all, err := j.Operations(context.Background(), journal.Filter{})
	if err != nil {
		return false, false
	}
	others := 0 // other unknown operations of the text
	for _, o := range commits(all) {
		if o.ID == op.ID || o.Payload.Text != op.Payload.Text || o.Payload.Target != op.Payload.Target {
			continue
		}
		switch o.State {
		case journal.Committed:
			msgs--
		case journal.Unknown:
			others++
		}
	}
	switch {
	case msgs <= 0:
		return false, true
	case others == 0:
		return true, true
	}
	return w.tookDuringAttempt(j, op), true
}

// tookDuringAttempt says whether Telegram took op's text in its chat while op's
// last attempt was out: between its last move to committing and the move after.
func (w *world) tookDuringAttempt(j *journal.Journal, op journal.Operation) bool {
	ts, err := j.Transitions(context.Background(), op.ID)
	if err != nil {
		return false
	}
	var from, to time.Time
	for i, t := range ts {
		if t.To == journal.Committing {
			from, to = t.At, time.Now()
			if i+1 < len(ts) {
				to = ts[i+1].At
			}
		}
	}
	var chat int64
	fmt.Sscan(op.Payload.Target, &chat)
	for _, c := range w.srv.CallsTo("sendMessage") {
		took := c.Fault == telegramtest.ActionAcceptThenReply || c.Fault == telegramtest.ActionAcceptThenDrop ||
			c.Fault == telegramtest.ActionAcceptThenHang || (c.Fault == telegramtest.ActionNone && c.Status == 200)
		if c.ChatID == chat && c.Params["text"] == op.Payload.Text && took && !c.Time.Before(from.Add(-time.Second)) && !c.Time.After(to.Add(time.Second)) {
			return true
		}
	}
	return false
}

// messagesOf are the messages in op's target chat sent with its text: edited
// or deleted since or not, as the final checks count them. A message the run
// edited or deleted arrived all the same, and the truth told of an unknown
// outcome must not depend on what the run did to another message of the text.
func (w *world) messagesOf(op journal.Operation) []telegramtest.Message {
	var chat int64
	fmt.Sscan(op.Payload.Target, &chat)
	return w.messagesWith(chat, op.Payload.Text)
}

// openCards are the approval cards in chat that still have their buttons.
func (w *world) openCards(chat int64) []telegramtest.Message {
	var out []telegramtest.Message
	for _, m := range w.srv.Messages(chat) {
		if strings.Contains(string(m.ReplyMarkup), "ap1:") {
			out = append(out, m)
		}
	}
	return out
}

// notices are the unknown-outcome notices that still have their buttons.
func (w *world) notices() []telegramtest.Message {
	var out []telegramtest.Message
	for _, m := range w.srv.Messages(operator) {
		if strings.Contains(string(m.ReplyMarkup), "rs1:") {
			out = append(out, m)
		}
	}
	return out
}

var apData = regexp.MustCompile(`ap1:[a-z0-9-]+:`)

func approveData(card telegramtest.Message, yes bool) string {
	prefix := apData.FindString(string(card.ReplyMarkup))
	return prefix + map[bool]string{true: "y", false: "n"}[yes]
}

// open returns the commits not yet ended, by id and state; ok is false when the
// journal could not be read.
func (w *world) open() ([]string, bool) {
	j, done, err := w.openJournal()
	if err != nil {
		return nil, false
	}
	defer done()
	ops, err := j.Operations(context.Background(), journal.Filter{States: []journal.State{journal.Prepared, journal.Verified,
		journal.AwaitingApproval, journal.Approved, journal.Committing, journal.RetryWait, journal.Unknown, journal.NotDelivered}})
	if err != nil {
		return nil, false
	}
	var out []string
	for _, op := range commits(ops) {
		out = append(out, op.ID+":"+string(op.State))
	}
	return out, true
}
