package cli

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/countersign/countersign/action"
	"github.com/countersign/countersign/agent"
	"github.com/countersign/countersign/coord"
	"github.com/countersign/countersign/journal"
	"github.com/countersign/countersign/model"
	"github.com/countersign/countersign/operator"
	"github.com/countersign/countersign/policy"
)

// The coordinator's own actions, recorded as agent.Steps beside agent's
// (ActionOK, ActionRetry, ActionFallback, ActionStop, ActionStallWarning,
// ActionStallAbort).
const (
	// ActionStart: an attempt's process started; Detail is "pid N" (its process
	// group has the same id).
	ActionStart model.Action = "start"
	// ActionForget: a resumed session could not be opened; the chat's next
	// message starts a new one.
	ActionForget model.Action = "forget_session"
)

// Options are a Coordinator's dependencies; Provider, Gate, Sessions, Operator,
// Journal and Dir are required.
type Options struct {
	Provider Provider
	Gate     Gate
	Sessions Sessions
	// Operator reads each task's policy snapshot; Journal the operations its
	// runs made.
	Operator *operator.Operator
	Journal  *journal.Journal
	// Dir holds a working folder per chat (Dir/<chat>), made when first used.
	Dir string
	// Transport names the chats' transport ("telegram"): among replicas
	// (Journal joined as one), a chat's turn is the journal's, keyed by
	// transport and chat, so that two replicas never run one chat's
	// messages at once.
	Transport string
	// Env is the environment every attempt starts from, KEY=VALUE each; the
	// provider's variables are added to it.
	Env []string
	// Observe, when set, hears every Step as it happens.
	Observe func(model.Step)
	// Sleep replaces the wait between attempts (tests); it must return ctx's
	// error when ctx ends first.
	Sleep func(context.Context, time.Duration) error
	// Now replaces the clock the stall watch measures a CLI's silence by
	// (tests: a silence then lasts exactly as long as the test says, however
	// busy the machine).
	Now func() time.Time
}

// Coordinator is the command handler's Agent for an agent CLI: each message is
// a run of the CLI in the chat's task, retried by one schedule, in the chat's
// session. It is safe for concurrent use; one chat runs one message at a time,
// in this process or, among replicas, in all of them (turn.go).
type Coordinator struct {
	opts    Options
	jitter  func(int64) int64
	running agent.Running
	chats   chatLocks    // a process's chats' turns, in memory
	turns   *coord.Coord // replicas': on the journal (turn.go)
}

// New returns the coordinator of o.Provider.
func New(o Options) (*Coordinator, error) {
	if o.Provider == nil || o.Gate == nil || o.Sessions == nil || o.Operator == nil || o.Journal == nil || o.Dir == "" {
		return nil, errors.New("cli: Provider, Gate, Sessions, Operator, Journal and Dir are required")
	}
	if o.Observe == nil {
		o.Observe = func(model.Step) {}
	}
	if o.Sleep == nil {
		o.Sleep = model.Sleep
	}
	if o.Now == nil {
		o.Now = time.Now
	}
	return &Coordinator{opts: o, jitter: rand.Int64N, turns: coord.New(o.Journal)}, nil
}

// message is the state of one message's attempts.
type message struct {
	taskID, chat string
	// text is the operator's.
	text      string
	retry     model.Policy
	budget    *model.Budget
	attempt   Attempt
	overloads int
	runTime   time.Duration // the run's bound, the policy's run_time
	// stop ends the run early, for the reason given (set by bound).
	stop func(*runEnd)
}

// Chat runs text as a message to the CLI in chat, within task taskID, and
// returns the CLI's final text (or the final failure, in one line); the
// approvals its tool calls asked for reach the surfaces as the operator's
// events. The error is for what cannot be told
// to the chat: the journal failing, a folder that cannot be made.
func (c *Coordinator) Chat(ctx context.Context, taskID, chat, text string) (string, error) {
	// One message at a time per chat: two runs must not resume one session.
	ctx, endTurn, err := c.turn(ctx, taskID, chat)
	switch {
	case errors.Is(err, errTurnGiven):
		c.opts.Observe(model.Step{Action: model.ActionStop, Cause: "turn_lost", Detail: err.Error()})
		return "Stopped before it ran: this replica gave up its place in the chat's queue (it is stopping, or lost the journal). Nothing was done; send the message again.", nil
	case err != nil && ctx.Err() != nil:
		return cancelledText(ctx), nil
	case err != nil:
		return "", err
	}
	defer endTurn()
	ctx, done := c.running.Start(ctx, chat)
	defer done()
	m, err := c.begin(ctx, taskID, chat, text)
	if err != nil {
		return "", err
	}
	ctx, unbound := c.bound(ctx, m)
	defer unbound()
	tools, closeTools, err := c.opts.Gate.Open(ctx, taskID)
	if err != nil {
		return "", fmt.Errorf("cli: %w", err)
	}
	defer closeTools()
	m.attempt.Tools = tools
	reply, err := c.attempts(ctx, m)
	if err != nil {
		return "", err
	}
	return reply, nil
}

// begin reads the task's policy snapshot and the chat's session, and makes the
// chat's folder.
func (c *Coordinator) begin(ctx context.Context, taskID, chat, text string) (*message, error) {
	p, err := c.opts.Operator.TaskPolicy(ctx, taskID)
	if err != nil {
		return nil, fmt.Errorf("cli: %w", err)
	}
	settings := p.Models()
	retry := model.RetryPolicy(settings).WithDefaults()
	session, err := c.opts.Sessions.Session(ctx, c.opts.Provider.Name(), chat)
	if err != nil {
		return nil, fmt.Errorf("cli: %w", err)
	}
	dir := filepath.Join(c.opts.Dir, folderName(chat))
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return nil, fmt.Errorf("cli: the chat's folder: %w", err)
	}
	return &message{taskID: taskID, chat: chat, text: text, retry: retry, budget: model.NewBudget(retry.MaxAttempts, retry.MaxWait),
		runTime: settings.RunTime, attempt: Attempt{Prompt: text, Session: session, Model: settings.Name, Dir: dir, MaxTurns: settings.Steps}}, nil
}

// runEnd is why the coordinator ended a run the CLI had not ended: a stop of
// the run's own tool calls (a doom loop, a spent budget), which the CLI would
// only see as a tool error, or the run's time bound.
type runEnd struct{ cause, say string }

func (e *runEnd) Error() string { return e.say }

// turnsSpent is the end of a run that reached the policy's model.steps where
// the CLI does not count its own turns.
func turnsSpent(n int) *runEnd {
	return &runEnd{cause: "max_turns", say: fmt.Sprintf("Stopped: the agent reached its bound of %d model turns (the policy's model.steps). "+
		"A send already approved still goes out; /ops shows what was done.", n)}
}

// bound is ctx ended by the run's bounds: the policy's run_time, and a
// doom-loop or budget stop of any call of the task while the run lasts (the
// run's MCP calls go through the same operator). unbound releases them.
func (c *Coordinator) bound(ctx context.Context, m *message) (context.Context, func()) {
	if m.runTime <= 0 { // a policy built in code without one
		m.runTime = policy.DefaultModel().RunTime
	}
	ctx, cancel := context.WithCancelCause(ctx)
	m.stop = func(e *runEnd) { cancel(e) }
	timer := time.AfterFunc(m.runTime, func() {
		cancel(&runEnd{cause: "run_time", say: fmt.Sprintf("Stopped: the agent ran past its time bound (%s). "+
			"A send already approved still goes out; /ops shows what was done.", m.runTime)})
	})
	unsubscribe := c.opts.Operator.Subscribe(func(ev operator.Event) {
		if ev.Kind != operator.Outcome || ev.Operation.TaskID != m.taskID {
			return
		}
		if cause := ev.Result.Cause; cause == action.CauseDoomLoop || cause == action.CauseBudget {
			cancel(&runEnd{cause: string(cause), say: "Stopped: " + ev.Result.Reason})
		}
	})
	return ctx, func() {
		unsubscribe()
		timer.Stop()
		cancel(nil)
	}
}

// ended is the text and step of a run ended early: by its bounds, or by
// /stop or a shutdown.
func (c *Coordinator) ended(ctx context.Context, m *message, detail string) string {
	var end *runEnd
	if errors.As(context.Cause(ctx), &end) {
		c.step(m, model.Step{Action: model.ActionStop, Cause: end.cause, Detail: end.say})
		return end.say
	}
	c.step(m, model.Step{Action: model.ActionStop, Cause: "cancelled", Detail: detail})
	return cancelledText(ctx)
}

// folderName is chat as a folder name: its letters, digits and dashes.
func folderName(chat string) string {
	s := strings.Map(func(r rune) rune {
		if r == '-' || r >= '0' && r <= '9' || r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' {
			return r
		}
		return '_'
	}, chat)
	if s == "" {
		return "_"
	}
	return s
}

// attempts runs the message until an attempt succeeds or the schedule gives
// up. Failures before the last are withheld: only the last is told, once.
func (c *Coordinator) attempts(ctx context.Context, m *message) (string, error) {
	for {
		if !m.budget.Take() {
			return c.giveUp(ctx, m, Outcome{Cause: "budget"}, "the message's attempts are spent"), nil
		}
		m.attempt.N++
		out, err := c.run(ctx, m)
		if err != nil {
			return "", err
		}
		forgot, err := c.keep(ctx, m, out)
		if err != nil {
			return "", err
		}
		switch {
		case ctx.Err() != nil:
			return c.ended(ctx, m, context.Cause(ctx).Error()), nil
		case out.OK:
			c.step(m, model.Step{Action: model.ActionOK})
			return out.Text, nil
		}
		wait, reason := c.next(m, out, forgot)
		if reason != "" {
			return c.giveUp(ctx, m, out, reason), nil
		}
		if err := c.opts.Sleep(ctx, wait); err != nil {
			return c.ended(ctx, m, "while waiting"), nil
		}
		switch {
		case out.Session != "":
			m.attempt.Prompt, m.attempt.Session = ContinuationPrompt, out.Session
		case forgot:
			m.attempt.Session = "" // the operator's text, in a new session
		}
		// Else the attempt ended before the CLI named a session: nothing of it
		// ran, and the next asks the same again.
	}
}

// keep records the session the attempt ran in as the chat's, and forgets a
// resumed one the CLI could not open (a failure that is not retryable, before
// any session: the resume found none), reporting that it did.
func (c *Coordinator) keep(ctx context.Context, m *message, out Outcome) (forgot bool, err error) {
	ended := ctx.Err() != nil // a stopped run says nothing of its session
	ctx = context.WithoutCancel(ctx)
	name := c.opts.Provider.Name()
	switch {
	case out.Session != "" && out.Session != m.attempt.Session:
		return false, c.opts.Sessions.SetSession(ctx, name, m.chat, out.Session)
	case out.Session == "" && m.attempt.Session != "" && !out.OK && !out.Retryable && !ended:
		c.step(m, model.Step{Action: ActionForget, Detail: m.attempt.Session})
		return true, c.opts.Sessions.SetSession(ctx, name, m.chat, "")
	}
	return false, nil
}

// next is the wait before the next attempt after the failed out, or why there
// is none. It answers with the provider's two answers and the policy's
// schedule: agent.Policy's backoff, the message's budget, the fallback model.
// A session forgot (the CLI no longer has it) is no failure of the service:
// while the operator's text is all that was asked, it is asked again at once,
// in a new session; later, a new session would repeat what the lost one did.
func (c *Coordinator) next(m *message, out Outcome, forgot bool) (time.Duration, string) {
	afresh := forgot && m.attempt.Prompt == m.text
	switch {
	case !out.Retryable && !afresh:
		return 0, "not retryable"
	case m.attempt.N >= m.retry.MaxAttempts:
		return 0, "attempts spent"
	case afresh:
		c.step(m, model.Step{Action: model.ActionRetry, Cause: out.Cause, Detail: "in a new session"})
		return 0, ""
	}
	wait := out.RetryAfter
	if wait <= 0 {
		wait = m.retry.Backoff(m.attempt.N, c.jitter)
	}
	if left := m.budget.WaitLeft(); wait > left {
		return 0, "wait budget spent"
	}
	m.budget.SpendWait(wait)
	c.step(m, model.Step{Action: model.ActionRetry, Cause: out.Cause, Wait: wait})
	if !out.Overload {
		m.overloads = 0
		return wait, ""
	}
	m.overloads++
	if fb := m.retry.Fallback(m.overloads, m.attempt.Model); fb != "" {
		m.attempt.Model, m.overloads = fb, 0
		c.step(m, model.Step{Action: model.ActionFallback, Detail: fb})
	}
	return wait, ""
}

// giveUp records the stop and words the final failure in one line, with what
// the message's task already did in the world: a send that went out before
// the failure is told, not hidden under "nothing was done".
func (c *Coordinator) giveUp(ctx context.Context, m *message, out Outcome, reason string) string {
	c.step(m, model.Step{Action: model.ActionStop, Cause: out.Cause, Detail: reason})
	said := firstLine(out.Text)
	if said == "" {
		said = "it ended without an answer (" + out.Cause + ")"
	}
	done := "Nothing else was done"
	if did := c.done(ctx, m.taskID); len(did) > 0 {
		done = "Done before that: " + strings.Join(did, ", ") + "; nothing else was done"
	}
	return fmt.Sprintf("The agent could not finish after %d attempt(s): %s. %s; /ops shows what was.", m.attempt.N, strings.TrimSuffix(said, "."), done)
}

// done is what the task's commits did in the world, oldest first, each as
// its tool and operation: those committed, and those whose outcome is
// unknown (they may have). A journal that cannot be read says nothing here;
// /ops is named beside it.
func (c *Coordinator) done(ctx context.Context, taskID string) []string {
	ops, err := c.opts.Journal.Operations(context.WithoutCancel(ctx), journal.Filter{TaskID: taskID, States: []journal.State{journal.Committed, journal.Unknown}})
	if err != nil {
		return nil
	}
	slices.Reverse(ops)
	var did []string
	for _, op := range ops {
		what := op.Tool + " " + op.ID
		if op.State == journal.Unknown {
			what += " (whether it arrived is not known)"
		}
		did = append(did, what)
	}
	return did
}

func firstLine(s string) string {
	s, _, _ = strings.Cut(strings.TrimSpace(s), "\n")
	return strings.TrimSpace(s)
}

func (c *Coordinator) step(m *message, s model.Step) {
	s.Attempt, s.Model = m.attempt.N, m.attempt.Model
	c.opts.Observe(s)
}

// Stop ends the run in chat, its whole process group, and reports whether
// there was one; the run tells the chat it stopped.
func (c *Coordinator) Stop(chat string) bool { return c.running.Stop(chat) }

// Reset forgets the chat's session: its next message starts a new one.
func (c *Coordinator) Reset(ctx context.Context, chat string) error {
	return c.opts.Sessions.SetSession(ctx, c.opts.Provider.Name(), chat, "")
}

// cancelledText tells the chat why its run ended early.
func cancelledText(ctx context.Context) string {
	if errors.Is(context.Cause(ctx), agent.ErrStopped) {
		return "Stopped, as you asked: the agent was ended. A send already approved still goes out."
	}
	return "Stopped: the bot is shutting down."
}

// chatLocks lets one message of each chat run at a time.
type chatLocks struct {
	mu    sync.Mutex
	chats map[string]chan struct{}
}

// lock waits for chat's turn, or for ctx to end (its error); unlock gives the
// turn to the next message.
func (l *chatLocks) lock(ctx context.Context, chat string) (unlock func(), err error) {
	l.mu.Lock()
	if l.chats == nil {
		l.chats = map[string]chan struct{}{}
	}
	ch, ok := l.chats[chat]
	if !ok {
		ch = make(chan struct{}, 1)
		l.chats[chat] = ch
	}
	l.mu.Unlock()
	select {
	case ch <- struct{}{}:
		return func() { <-ch }, nil
	case <-ctx.Done():
		return nil, ctx.Err()
	}
}
