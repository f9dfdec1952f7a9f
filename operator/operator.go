// Package operator is the runtime between a caller (a person's command, a model) and
// the world: one tool call goes through the loop guard, budgets, prepare, the
// verifier, approval, a write-ahead commit and the decision table, and ends in one
// normalized result. Every step that changes anything is journaled before it
// happens; the verifier, which only reads, runs first and its verdict is journaled
// with the call.
package operator

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"math/rand/v2"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/countersign/countersign/action"
	"github.com/countersign/countersign/coord"
	"github.com/countersign/countersign/journal"
	"github.com/countersign/countersign/policy"
	"github.com/countersign/countersign/tools"
	"github.com/countersign/countersign/vault"
	"github.com/countersign/countersign/verifier"
)

// Clock tells the time and waits. Tests replace it to assert waits without sleeping.
type Clock interface {
	Now() time.Time
	// Sleep waits for d or until ctx is done, whichever is first, and returns
	// ctx.Err() in the second case.
	Sleep(ctx context.Context, d time.Duration) error
}

type realClock struct{}

func (realClock) Now() time.Time { return time.Now() }

func (realClock) Sleep(ctx context.Context, d time.Duration) error {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-t.C:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}

// Verifier checks a prepared payload before anyone is asked to approve it.
type Verifier interface {
	Check(ctx context.Context, in verifier.Input) verifier.Verdict
}

// Options are the operator's dependencies. Journal, Tools and Policy are required.
type Options struct {
	Journal *journal.Journal
	Tools   *tools.Registry
	// Policy is the policy in force for tasks started from now on.
	Policy   *policy.Policy
	Verifier Verifier // nil: every payload passes
	// Shows, when set, says whether the review page shows a payload whole
	// (review.Shows): one it would show less of is stopped, as a verifier's
	// stop with its reason, before anyone is asked. Nil: no page is served.
	Shows func(action.Payload) error
	// Vault receives an envelope for every unknown outcome. Nil: unknown outcomes
	// are journaled only.
	Vault *vault.Vault
	// Transport names what the Tools' sender delivers through ("telegram",
	// "console"). It is recorded on every operation this operator creates, and the
	// operator commits, resumes and recovers only operations of its own transport:
	// another surface's operations may be shown and resolved here, never delivered.
	// Empty: this operator commits nothing (a process that only reads and resolves).
	Transport string
	// Remote records new operations under Transport but never delivers them: it
	// does not commit, resume, recover or sweep. An auto-approved commit is left
	// approved for the owner of the transport, whose Sweep runs it. A process
	// beside the owner (a stdio MCP server next to a running bot) is Remote.
	Remote bool
	// SweepEvery is how often Sweep expires approvals, reconciles the vault and
	// prunes the inbox (default 30s); WatchEvery how often it looks for work other
	// processes left to the owner (default 1s). Tests shorten both.
	SweepEvery, WatchEvery time.Duration
	Clock                  Clock          // nil: the real clock
	Rand                   func() float64 // nil: math/rand; the jitter's source
	Logger                 *slog.Logger   // nil: slog.Default()
	// Observe, when set, is told of every commit attempt this operator makes as
	// it ends (observe.go): a process's metrics.
	Observe func(Attempt)
}

// Operator runs tool calls. It is safe for concurrent use.
type Operator struct {
	opts Options
	// shared is what the replicas share beside the journal: the periodic
	// work's turns, the pools of send slots and strangers' marks it prunes.
	shared *coord.Coord
	wg     sync.WaitGroup
	// resolving makes Resolve's two writes (the envelope, then the journal) one
	// step, so two people answering at once cannot leave them disagreeing.
	resolving sync.Mutex
	// notesOwed holds, under resolving, the operations a later attempt delivered
	// whose note could not say so (a full disk); Reconcile writes them again.
	// notesChecked says Reconcile has looked at every delivered operation's note
	// once since this process began to lead, for the ones a stop left owed.
	notesOwed    map[string]bool
	notesChecked bool

	subs subscribers
	// self names this process's run in the approvals it publishes
	// (journal.Approval.ShownBy): the watch tells what it published itself, a
	// moment ago, from what a stopped run or another replica published.
	self string
	// running counts, per operation, the goroutines here that run it or are about
	// to (an approval recorded, its commit next): the watch leaves those alone.
	runMu   sync.Mutex
	running map[string]int
	// lead is whether this replica leads (replica.go).
	lead leadership
	// attempts holds when each attempt in flight moved to committing (observe.go).
	attempts sync.Map
	// collected is when the sweep last collected the vault's old notes (remind.go).
	collected atomic.Pointer[time.Time]
}

// Errors a caller of the operator acts on. Failures of a tool call are results, not
// errors; these are refusals of the request itself, returned as a *Refusal.
var (
	ErrUnknownTool   = errors.New("no such tool")
	ErrNotApprover   = errors.New("not an approver")
	ErrDecided       = errors.New("already decided")
	ErrNotRetryable  = errors.New("operation cannot be retried")
	ErrNotResolvable = errors.New("operation has no unknown outcome to resolve")
	ErrNotCancelable = errors.New("operation cannot be cancelled")
	// ErrOtherTransport refuses to decide or send here an operation that another
	// transport delivers (a Telegram operation seen from the console).
	ErrOtherTransport = errors.New("operation is delivered by another transport")
	// ErrNoSuchApproval refuses a decision on an approval the journal does not know.
	ErrNoSuchApproval = errors.New("no such approval")
	// ErrSelfApproval refuses to approve a request of one's own, where a
	// policy says self_approval: false (by a tap, a vote or a grant).
	ErrSelfApproval = errors.New("may not approve a request of one's own")
)

// Refusal is a request the operator turned down, with the reason in words for
// the person who asked. It unwraps to one of the Err* sentinels of this
// package or, where an approval asks a second factor that was not given, to
// the journal's *journal.StepUpError, which names the factor to ask for.
type Refusal struct {
	Err   error
	Words string
}

func (r *Refusal) Error() string { return "operator: " + r.Words }
func (r *Refusal) Unwrap() error { return r.Err }

func refusal(sentinel error, format string, args ...any) error {
	return &Refusal{Err: sentinel, Words: fmt.Sprintf(format, args...)}
}

// New returns an operator over the given dependencies.
func New(o Options) (*Operator, error) {
	if o.Journal == nil || o.Tools == nil || o.Policy == nil {
		return nil, errors.New("operator: Journal, Tools and Policy are required")
	}
	if o.Clock == nil {
		o.Clock = realClock{}
	}
	if o.Rand == nil {
		o.Rand = rand.Float64
	}
	if o.Logger == nil {
		o.Logger = slog.Default()
	}
	if o.SweepEvery <= 0 {
		o.SweepEvery = 30 * time.Second
	}
	if o.WatchEvery <= 0 {
		o.WatchEvery = time.Second
	}
	return &Operator{opts: o, shared: coord.New(o.Journal), running: map[string]int{}, self: journal.NewID("run")}, nil
}

// StartTask opens a task (Requester, Chat, Summary, Origin and Surface set by the
// caller) under a snapshot of the policy in force. A task whose Origin was seen
// before is refused with journal.ErrDuplicate.
func (o *Operator) StartTask(ctx context.Context, t journal.Task) (journal.Task, error) {
	t.Policy = o.opts.Policy
	return o.opts.Journal.CreateTask(ctx, t)
}

// Call is one tool call by name with JSON arguments.
type Call struct {
	Tool string
	Args json.RawMessage
}

// Call runs one tool call within a task. A prepare_* call ends at once; a commit_*
// call that needs approval ends pending, and Decide continues it; an auto-approved
// commit runs to its outcome. Failures of the call are in the result; the error is
// for a broken operator or an unknown tool.
func (o *Operator) Call(ctx context.Context, taskID string, c Call) (action.Result, error) {
	task, err := o.opts.Journal.Task(ctx, taskID)
	if err != nil {
		return action.Result{}, fmt.Errorf("operator: %w", err)
	}
	return o.call(ctx, &newTask{Task: task, stored: true}, c)
}

// Begin starts a task (Requester, Chat, Summary, Origin and Surface set by the
// caller, as for StartTask) whose first act is the call c, and makes the call as
// Call does. The task is journaled in the transaction that journals the call's
// operation, so that starting a task costs no durable write of its own, and a
// crash before that write leaves nothing, for a replay to start afresh. A task
// whose Origin was seen before is refused with journal.ErrDuplicate, and a call of
// an unknown tool with ErrUnknownTool; neither stores anything. It returns the task
// as stored, or with no ID when nothing was (the write refused, by a full disk):
// a later call begins a task afresh instead of running in one that does not exist.
func (o *Operator) Begin(ctx context.Context, t journal.Task, c Call) (journal.Task, action.Result, error) {
	t.Policy = o.opts.Policy
	if t.Origin != "" {
		if _, err := o.opts.Journal.TaskByOrigin(ctx, t.Origin); err == nil {
			return t, action.Result{}, fmt.Errorf("operator: task from %s: %w", t.Origin, journal.ErrDuplicate)
		} else if !errors.Is(err, journal.ErrNotFound) {
			return t, action.Result{}, fmt.Errorf("operator: %w", err)
		}
	}
	nt := &newTask{Task: t}
	r, err := o.call(ctx, nt, c)
	if !nt.stored {
		nt.Task.ID = "" // the journal named it in a transaction that did not commit
	}
	return nt.Task, r, err
}

// newTask is the task of a call, and whether it is stored yet: a task that Begin
// started is stored with the call's first operation.
type newTask struct {
	journal.Task
	stored bool
}

// create journals op (in state prepared, then the moves then) in the task's
// existing record, or together with the task when it is not stored yet.
func (o *Operator) create(ctx context.Context, nt *newTask, op journal.Operation, reason string, then ...journal.Move) (journal.Operation, error) {
	var err error
	if nt.stored {
		op, err = o.opts.Journal.CreateOperation(ctx, op, reason, then...)
	} else {
		nt.Task, op, err = o.opts.Journal.CreateFirstOperation(ctx, nt.Task, op, reason, then...)
		nt.stored = err == nil
	}
	if err != nil {
		return op, fmt.Errorf("operator: %w", err)
	}
	return op, nil
}

func (o *Operator) call(ctx context.Context, nt *newTask, c Call) (action.Result, error) {
	task := nt.Task
	tool, ok := o.opts.Tools.Get(c.Tool)
	if !ok || !hasTool(task.Policy, c.Tool) {
		return action.Result{}, fmt.Errorf("operator: %q: %w", c.Tool, ErrUnknownTool)
	}
	fp := tools.Fingerprint(tool, c.Args)
	if nt.stored { // a task not stored yet has no earlier calls for the guard to weigh
		if r, stop, err := o.guard(ctx, task, tools.Brief(tool, c.Args), fp); stop || err != nil {
			if err != nil {
				return r, err
			}
			return o.refuse(ctx, nt, c.Tool, fp, r, "")
		}
	}
	payload, err := o.prepare(ctx, tool, c.Args)
	var argsErr *tools.ArgsError
	if errors.As(err, &argsErr) {
		return o.refuse(ctx, nt, c.Tool, fp, repairable(argsErr.Reason), "the arguments were refused again: "+argsErr.Reason)
	}
	if err != nil {
		return action.Result{}, fmt.Errorf("operator: prepare %s: %w", c.Tool, err)
	}
	if _, commits := tool.(tools.Committer); !commits {
		op, err := o.create(ctx, nt, o.newOperation(task, c.Tool, fp, payload), "prepared")
		if err != nil {
			return action.Result{}, err
		}
		return draftResult(op), nil
	}
	return o.verifyAndAsk(ctx, nt, o.newOperation(task, c.Tool, fp, payload))
}

// prepare turns a call's arguments into its payload, with no side effect: a tool
// that acts on what was sent (an edit) reads it from the journal. A commit's
// payload carries what the call says changed since a rejection (tools.StatedChange),
// and the chat it reaches as its members know it now (tools.Bind), read again
// before it leaves (checkHolds).
func (o *Operator) prepare(ctx context.Context, tool tools.Tool, args json.RawMessage) (action.Payload, error) {
	var p action.Payload
	var err error
	if r, ok := tool.(tools.Reader); ok {
		p, err = r.PrepareFrom(ctx, args, History{Journal: o.opts.Journal, Clock: o.opts.Clock, Transport: o.opts.Transport})
	} else {
		p, err = tool.Prepare(args)
	}
	if _, commits := tool.(tools.Committer); err != nil || !commits {
		return p, err
	}
	p.Changed, err = tools.StatedChange(tool.Name(), args)
	return tools.Bind(ctx, o.opts.Tools.Chats(), tool, p), err
}

// newOperation is an operation of task, made here and delivered by this
// operator's transport.
func (o *Operator) newOperation(task journal.Task, tool, fp string, payload action.Payload) journal.Operation {
	return journal.Operation{TaskID: task.ID, Tool: tool, Fingerprint: fp, Payload: payload,
		Surface: task.Surface, Transport: o.opts.Transport}
}

func hasTool(p *policy.Policy, name string) bool {
	_, ok := p.Tool(name)
	return ok
}

// refuse journals a call that was stopped before it was prepared, so that the audit
// log shows every call (and the loop guard sees it), and returns the result with the
// operation's id. A repair is paid as fail says; again words it, if the budget is spent.
func (o *Operator) refuse(ctx context.Context, nt *newTask, tool, fp string, r action.Result, again string) (action.Result, error) {
	op, err := o.create(ctx, nt, o.newOperation(nt.Task, tool, fp, action.Payload{}), "call received")
	if err != nil {
		return r, err
	}
	return o.fail(ctx, op.ID, journal.Move{From: journal.Prepared, To: journal.Failed}, r, again)
}

// fail makes m (a move to failed) with result r. A repair goes back to the caller
// and is paid from the task's repair budget in the same move, whatever asked for it
// (refused arguments, the verifier); past the budget the call stops instead, and
// again says what was asked for once more.
func (o *Operator) fail(ctx context.Context, opID string, m journal.Move, r action.Result, again string) (action.Result, error) {
	r.OperationID = opID
	if r.NextAction == action.NextRepair {
		m.Spend = &journal.Spend{Repair: true}
	}
	m.Reason, m.Result = r.Reason, &r
	err := o.opts.Journal.Move(ctx, opID, m)
	var budget *journal.BudgetError
	if errors.As(err, &budget) {
		r = stopResult(report(again+"; nothing was sent", "", "fix the request by hand"))
		r.OperationID, r.Cause, r.Reason = opID, action.CauseBudget, budget.Error()+": "+r.Reason
		m.Spend, m.Reason, m.Result = nil, r.Reason, &r
		err = o.opts.Journal.Move(ctx, opID, m)
	}
	if err != nil {
		return action.Result{}, fmt.Errorf("operator: %w", err)
	}
	o.publishOutcome(ctx, opID, r)
	return r, nil
}

// verifyAndGate runs the verifier on a journaled operation (one a crash left
// prepared) and then asks for approval, or auto-approves.
func (o *Operator) verifyAndGate(ctx context.Context, task journal.Task, op journal.Operation) (action.Result, error) {
	v := o.verify(ctx, task, op)
	if v.Decision != verifier.Pass {
		return o.refuseVerdict(ctx, op, v)
	}
	if err := o.move(ctx, op.ID, verified(v)); err != nil {
		return action.Result{}, err
	}
	return o.gate(ctx, task, op, journal.Verified)
}

// verifyAndAsk runs the verifier on the payload of a new call and journals the call:
// prepared, verified and awaiting approval, with its approval, in one transaction,
// before any card can show it; or prepared and refused, when the verifier does not
// pass it. The verifier reads only the payload and the policy, so nothing it sees
// is missing from the journal yet.
func (o *Operator) verifyAndAsk(ctx context.Context, nt *newTask, op journal.Operation) (action.Result, error) {
	v := o.verify(ctx, nt.Task, op)
	if v.Decision != verifier.Pass {
		op, err := o.create(ctx, nt, op, "prepared")
		if err != nil {
			return action.Result{}, err
		}
		return o.refuseVerdict(ctx, op, v)
	}
	a := o.newApproval(nt.Task, op)
	op, err := o.create(ctx, nt, op, "prepared", verified(v), askApproval(journal.Verified, a))
	if err != nil {
		return action.Result{}, err
	}
	return o.asked(ctx, nt.Task, op, a)
}

func (o *Operator) verify(ctx context.Context, task journal.Task, op journal.Operation) verifier.Verdict {
	if o.opts.Shows != nil {
		if err := o.opts.Shows(op.Payload); err != nil {
			return verifier.Verdict{Decision: verifier.Stop, Reasons: []string{err.Error()}, Checks: 1}
		}
	}
	if o.opts.Verifier == nil {
		return verifier.Verdict{Decision: verifier.Pass}
	}
	tool, _ := o.opts.Tools.Get(op.Tool)
	in := tools.CheckOf(tool, op.Payload)
	m := task.Policy.Models()
	in.Tool, in.Policy, in.Model = op.Tool, &task.Policy.Verify, &m
	in.Task, in.Chat, in.Content, in.Changed = task.ID, task.Chat, tools.Content(op.Payload), op.Payload.Changed
	in.Operation = op.ID // "" for a new call
	return o.opts.Verifier.Check(ctx, in)
}

// verified is the move of a payload the verifier passed.
func verified(v verifier.Verdict) journal.Move {
	return journal.Move{From: journal.Prepared, To: journal.Verified, Reason: "verifier: " + v.Summary(), Verdict: v.Summary()}
}

// refuseVerdict ends an operation the verifier did not pass. A repair goes back to
// the caller within the task's repair budget (see fail); a stop stops.
func (o *Operator) refuseVerdict(ctx context.Context, op journal.Operation, v verifier.Verdict) (action.Result, error) {
	reasons := strings.Join(v.Reasons, "; ")
	r := stopResult(report("the verifier stopped it: "+reasons+"; nothing was sent", "", "change the request"))
	if v.Decision == verifier.Repair {
		r = repairable("verifier asks for a repair: " + reasons)
	}
	return o.fail(ctx, op.ID, journal.Move{From: journal.Prepared, To: journal.Failed, Verdict: v.Summary()}, r,
		"the verifier asked for a repair again: "+reasons)
}

// gate moves a verified (or not-delivered) operation to awaiting approval, or
// straight to approved and on to the commit when a rule auto-approves it.
func (o *Operator) gate(ctx context.Context, task journal.Task, op journal.Operation, from journal.State) (action.Result, error) {
	a := o.newApproval(task, op)
	if err := o.move(ctx, op.ID, askApproval(from, a)); err != nil {
		return action.Result{}, err
	}
	op.State = journal.AwaitingApproval
	return o.asked(ctx, task, op, a)
}

// askApproval is the move that asks for approval a, which is stored with it.
func askApproval(from journal.State, a *journal.Approval) journal.Move {
	return journal.Move{From: from, To: journal.AwaitingApproval, Reason: "approval requested", Approval: a}
}

// asked goes on from an approval just asked for: an auto_approve rule decides it at
// once and the commit runs; otherwise the call ends pending, waiting for a tap.
func (o *Operator) asked(ctx context.Context, task journal.Task, op journal.Operation, a *journal.Approval) (action.Result, error) {
	if !o.needsApproval(task, op) {
		defer o.hold(op.ID)() // approved, and run here next: not the watch's
		d, err := o.opts.Journal.Decide(ctx, a.ID, journal.DecideApprove, journal.ByPolicy)
		if err != nil && !errors.Is(err, journal.ErrDecided) {
			return action.Result{}, fmt.Errorf("operator: auto-approve %s: %w", op.ID, err)
		}
		if err == nil {
			o.publishDecided(ctx, d)
		}
		return o.run(ctx, op.ID)
	}
	release := o.hold(op.ID) // approved under a grant, it is run here next
	if granted, err := o.grantFor(ctx, task, op, a); granted || err != nil {
		defer release()
		if err != nil {
			return action.Result{}, err
		}
		return o.run(ctx, op.ID)
	}
	release()
	o.publishAsked(ctx, op, *a)
	reason := fmt.Sprintf("awaiting approval %s until %s", a.ID, a.Expires.Format(time.RFC3339))
	if a.Required > 1 {
		reason += fmt.Sprintf(" from %d different approvers", a.Required)
	}
	if a.StepUp != policy.NoFactor {
		reason += "; " + StepUpLine(a.StepUp)
	}
	return action.Result{Status: action.StatusPending, OperationID: op.ID, SideEffect: action.SideEffectPrepared,
		NextAction: action.NextAwaitApproval, Reason: reason}, nil
}

func (o *Operator) move(ctx context.Context, id string, m journal.Move) error {
	if err := o.record(ctx, id, m); err != nil {
		return fmt.Errorf("operator: %w", err)
	}
	return nil
}

// outcomeWait bounds how long a commit attempt waits for a full disk to have room
// for its move; past it the operation stays where it was (committing is made
// unknown, to be verified, by the next start's crash recovery).
const outcomeWait = 10 * time.Minute

// record makes the journal move m. The moves of a commit attempt are written
// again (1 s, doubling to 30 s) while a full disk refuses them: the outcome of an
// attempt (a move out of committing) is known only to this process until it is
// journaled, and an attempt that cannot be written ahead (a move to committing)
// sends nothing and would otherwise strand its approved or scheduled operation,
// unseen by /pending, until a restart.
func (o *Operator) record(ctx context.Context, id string, m journal.Move) (err error) {
	defer func() {
		if err == nil {
			o.observe(id, m)
		}
	}()
	err = o.opts.Journal.Move(ctx, id, m)
	if (m.From != journal.Committing && m.To != journal.Committing) || !journal.IsFull(err) {
		return err
	}
	o.opts.Logger.Error("attempt not journaled: the disk is full; writing it again until there is room", "op", id, "from", m.From, "to", m.To)
	start, wait := o.opts.Clock.Now(), time.Second
	for journal.IsFull(err) && o.opts.Clock.Now().Sub(start) < outcomeWait {
		if o.opts.Clock.Sleep(ctx, wait) != nil {
			return err
		}
		wait = min(2*wait, 30*time.Second)
		err = o.opts.Journal.Move(ctx, id, m)
	}
	if err == nil {
		o.opts.Logger.Info("attempt journaled once there was room", "op", id, "from", m.From, "to", m.To)
	}
	return err
}

// TaskPolicy is the policy snapshot a task runs under: what a model's turn in it
// may spend, and on which model, comes from here, not from the file as it is now.
func (o *Operator) TaskPolicy(ctx context.Context, taskID string) (*policy.Policy, error) {
	task, err := o.opts.Journal.Task(ctx, taskID)
	if err != nil {
		return nil, fmt.Errorf("operator: %w", err)
	}
	return task.Policy, nil
}

// Tool is the named tool, when the policy in force offers it: the surfaces ask
// it how its payloads are shown (tools.ShowOf).
func (o *Operator) Tool(name string) (tools.Tool, bool) { return o.opts.Tools.Get(name) }
