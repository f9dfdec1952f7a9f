package operator

import (
	"context"
	"sync"

	"github.com/countersign/countersign/action"
	"github.com/countersign/countersign/journal"
)

// EventKind names what happened to an operation. The operator knows no surface:
// the surfaces that can reach a person (a card in a chat, a prompt in a terminal)
// subscribe and show each event their own way, whatever surface made the request.
type EventKind int

// The kinds of event.
const (
	// ApprovalNeeded: an operation waits for a tap; Approval is set.
	ApprovalNeeded EventKind = iota + 1
	// Decided: an approval was decided (approve, reject, expiry); Approval is set.
	Decided
	// Outcome: an operation reached an outcome (committed, unknown, failed,
	// rejected, expired, cancelled, resolved); Result is set.
	Outcome
	// VerificationAsked: someone asked the approvers to verify an unknown outcome.
	VerificationAsked
	// Reminder: the sweep's digest names an operation whose outcome is still
	// unknown; Result is set. Each operation of a digest is one event.
	Reminder
	// ApprovalReminder: an approval nobody decided is near its expiry, and
	// its approvers are reminded, once; Approval is set.
	ApprovalReminder
	// Voted: an approver approved an approval that needs more approvers; it
	// still waits. Approval is set, with its votes.
	Voted
	// PayloadEdited: an approver replaced the payload's text before approving
	// it; the old approval is void (a Decided event) and the new one is asked
	// (ApprovalNeeded). Operation holds the new payload, Approval the new
	// approval, Edit what changed.
	PayloadEdited
	// ApprovalEscalated: nobody decided an approval within escalate_after of
	// its time, and it goes to the escalation list too; Approval is set.
	ApprovalEscalated
	// StepUpLocked: wrong codes in a row locked an approver's second factor,
	// on the approval they were given for (Approval is set); Lock says whose,
	// and until when. Every approver hears of it: someone may be guessing.
	StepUpLocked
)

func (k EventKind) String() string {
	switch k {
	case ApprovalNeeded:
		return "approval_needed"
	case Decided:
		return "decided"
	case Outcome:
		return "outcome"
	case VerificationAsked:
		return "verification_asked"
	case Reminder:
		return "reminder"
	case ApprovalReminder:
		return "approval_reminder"
	case Voted:
		return "voted"
	case PayloadEdited:
		return "payload_edited"
	case ApprovalEscalated:
		return "approval_escalated"
	case StepUpLocked:
		return "step_up_locked"
	}
	return "event(?)"
}

// Event is one thing that happened to an operation, published after the journal
// write that records it.
type Event struct {
	Kind EventKind
	// Operation is the operation as journaled when the event was published: its
	// Surface, Transport and TaskID say who asked and who delivers.
	Operation journal.Operation
	Approval  *journal.Approval // ApprovalNeeded, Decided, Voted, PayloadEdited, ApprovalEscalated
	Result    action.Result     // Outcome
	Edit      *journal.Edit     // PayloadEdited
	Lock      *Lock             // StepUpLocked
	// Late: work that ran on its own, not in a request (expiry, a scheduled
	// retry, a start's resumed work, a note resolved in the vault): nobody's
	// reply tells its outcome, so a surface tells the requester. A request's
	// reply tells its own outcome. ApprovalNeeded is never late: every surface
	// shows cards from it alone, whoever asked and whenever.
	Late bool
	// Request is the request whose work published the event, as its surface
	// named it (WithRequest); "" for one it did not name. A surface that
	// answers its own request in full (a tap edits its cards with the outcome)
	// knows its events by it.
	Request string
}

// subscribers are the functions events are handed to.
type subscribers struct {
	mu   sync.Mutex
	next int
	fns  map[int]func(Event)
}

// Subscribe calls fn for every event this operator publishes, in the publishing
// goroutine, after the journal write it reports. fn must not block: a surface hands
// the event to a goroutine or a queue. unsubscribe stops the calls.
func (o *Operator) Subscribe(fn func(Event)) (unsubscribe func()) {
	s := &o.subs
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.fns == nil {
		s.fns = map[int]func(Event){}
	}
	id := s.next
	s.next++
	s.fns[id] = fn
	return func() {
		s.mu.Lock()
		defer s.mu.Unlock()
		delete(s.fns, id)
	}
}

func (o *Operator) listeners() []func(Event) {
	s := &o.subs
	s.mu.Lock()
	defer s.mu.Unlock()
	fns := make([]func(Event), 0, len(s.fns))
	for _, fn := range s.fns {
		fns = append(fns, fn)
	}
	return fns
}

func (o *Operator) publish(ev Event) {
	for _, fn := range o.listeners() {
		fn(ev)
	}
}

// late marks a context whose work runs on its own, outside a caller's request
// (Resume, the sweep): the events it publishes are Late.
type lateKey struct{}

func asLate(ctx context.Context) context.Context { return context.WithValue(ctx, lateKey{}, true) }

func isLate(ctx context.Context) bool { late, _ := ctx.Value(lateKey{}).(bool); return late }

type requestKey struct{}

// WithRequest names the request ctx carries out, for the events its work
// publishes (Event.Request).
func WithRequest(ctx context.Context, id string) context.Context {
	return context.WithValue(ctx, requestKey{}, id)
}

func requestOf(ctx context.Context) string { id, _ := ctx.Value(requestKey{}).(string); return id }

// current is operation id as journaled now; when it cannot be read, just its id.
func (o *Operator) current(ctx context.Context, id string) journal.Operation {
	op, err := o.opts.Journal.Operation(context.WithoutCancel(ctx), id)
	if err != nil {
		return journal.Operation{ID: id}
	}
	return op
}

// showsHere reports whether a surface of this process shows the cards of op's
// approvals: it owns op's transport and a surface listens. An approval asked
// anywhere else (a remote process, or here before a surface subscribed at
// start-up) is the watch's to publish.
func (o *Operator) showsHere(op journal.Operation) bool {
	return op.Transport == o.opts.Transport && !o.opts.Remote && len(o.listeners()) > 0
}

// publishAsked publishes that op waits for approval a: the one event every
// surface shows an approval's cards from, whoever asked for it. A surface orders
// the cards after the reply to the request that asked, when it has one.
func (o *Operator) publishAsked(ctx context.Context, op journal.Operation, a journal.Approval) {
	if len(o.listeners()) == 0 {
		return
	}
	op.State = journal.AwaitingApproval
	o.publish(Event{Kind: ApprovalNeeded, Operation: op, Approval: &a})
}

// publishDecided publishes the decision on approval a.
func (o *Operator) publishDecided(ctx context.Context, a journal.Approval) {
	if len(o.listeners()) == 0 {
		return
	}
	o.publish(Event{Kind: Decided, Operation: o.current(ctx, a.OperationID), Approval: &a, Late: isLate(ctx), Request: requestOf(ctx)})
}

// publishVoted publishes an approval of a quorum that still waits.
func (o *Operator) publishVoted(ctx context.Context, a journal.Approval) {
	if len(o.listeners()) == 0 {
		return
	}
	o.publish(Event{Kind: Voted, Operation: o.current(ctx, a.OperationID), Approval: &a, Late: isLate(ctx), Request: requestOf(ctx)})
}

// publishOutcome publishes the outcome r of operation id.
func (o *Operator) publishOutcome(ctx context.Context, id string, r action.Result) {
	if len(o.listeners()) == 0 {
		return
	}
	r.OperationID = id
	o.publish(Event{Kind: Outcome, Operation: o.current(ctx, id), Result: r, Late: isLate(ctx), Request: requestOf(ctx)})
}
