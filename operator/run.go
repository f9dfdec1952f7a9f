package operator

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/countersign/countersign/action"
	"github.com/countersign/countersign/internal/stages"
	"github.com/countersign/countersign/journal"
	"github.com/countersign/countersign/policy"
	"github.com/countersign/countersign/tools"
	"github.com/countersign/countersign/verifier"
)

// Decision is a decision recorded on an approval.
type Decision struct {
	Approval journal.Approval // as decided
	// Result is the operation's final result when it will not be committed
	// (rejected, or expired before the tap); zero when approved: Proceed commits it.
	Result action.Result
	// release lets the sweep's watch take the approved operation again, once
	// Proceed has run it.
	release func()
}

// Approved reports whether the commit may go ahead.
func (d Decision) Approved() bool { return d.Approval.Decision == journal.DecideApprove }

// Waiting reports whether the approval was counted but still waits for more
// approvers (a quorum): nothing was decided yet.
func (d Decision) Waiting() bool {
	return d.Approval.Decision == journal.Pending && d.Approval.ID != ""
}

// Record records an approver's decision on an approval, as one compare-and-set in
// the journal, without committing anything: a surface answers the tap with what
// was really recorded, then calls Proceed. Who may decide is an approver of both
// the policy the task started with and the policy in force here (authority.go). Refusals change
// nothing and are *Refusal errors: ErrNotApprover, ErrDecided (a later decision:
// the first one won), ErrNoSuchApproval, ErrOtherTransport, ErrSelfApproval. An approval decided at
// or after its expiry records the expiry instead, with a terminal result.
//
// An approval that asks a second factor (step_up) refuses a tap on Approve
// and records nothing: the refusal unwraps to a *journal.StepUpError whose
// Asked is the factor to confirm it with (Confirm, ConfirmPasskey). That is
// the stronger of what the approval asked when it was made and what the
// task's snapshot and the policy in force ask now: a surface asks the
// approver for that factor, never one read off the approval.
func (o *Operator) Record(ctx context.Context, approvalID string, by policy.UserID, approve bool) (Decision, error) {
	return o.ballot(ctx, approvalID, by, approve, journal.Ballot{})
}

// ballot is Record with factor, the code or passkey receipt given with an
// approval (neither for a tap alone).
func (o *Operator) ballot(ctx context.Context, approvalID string, by policy.UserID, approve bool, factor journal.Ballot) (Decision, error) {
	a, err := o.opts.Journal.Approval(ctx, approvalID)
	if errors.Is(err, journal.ErrNotFound) {
		return Decision{}, refusal(ErrNoSuchApproval, "no approval %s", approvalID)
	}
	if err != nil {
		return Decision{}, fmt.Errorf("operator: %w", err)
	}
	op, err := o.opts.Journal.Operation(ctx, a.OperationID)
	if err != nil {
		return Decision{}, fmt.Errorf("operator: %w", err)
	}
	task, err := o.opts.Journal.Task(ctx, op.TaskID)
	if err != nil {
		return Decision{}, fmt.Errorf("operator: %w", err)
	}
	switch {
	case !o.mayDecide(task, a, by):
		return Decision{}, refusal(ErrNotApprover, "user %d may not decide %s: the approvers are those of both the policy its task started under and the policy in force", by, op.ID)
	case op.Transport != o.opts.Transport:
		return Decision{}, refusal(ErrOtherTransport, "%s is delivered by %s; decide it there", op.ID, orNobody(op.Transport))
	case approve && o.ownRequest(task, by):
		return Decision{Approval: a}, refusal(ErrSelfApproval, "user %d asked for %s, and self-approval is off: another approver must approve it (rejecting it is yours)", by, op.ID)
	}
	d := journal.DecideReject
	if approve {
		d = journal.DecideApprove
	}
	// An approved operation is this caller's to run (Proceed): the sweep's
	// watch must not take it between the decision and the commit.
	release := o.hold(op.ID)
	// The second factor the policies ask now goes with the ballot: the
	// journal refuses, in the transaction that would record the vote, one
	// that lacks it or what the approval asked when it was made.
	a, err = o.opts.Journal.DecideBallot(ctx, approvalID, journal.Ballot{Decision: d, By: by, Code: factor.Code, Receipt: factor.Receipt,
		StepUp: o.stepUp(task, op)})
	stages.Mark(ctx, stages.Decided)
	if err == nil && approve && a.Decision == journal.Pending {
		release() // one more approver is needed: nothing to run yet
		o.publishVoted(ctx, a)
		return Decision{Approval: a, Result: votedResult(a)}, nil
	}
	if err == nil && approve {
		o.publishDecided(ctx, a)
		return Decision{Approval: a, release: release}, nil
	}
	release()
	switch {
	case errors.Is(err, journal.ErrVoted):
		return Decision{Approval: a, Result: votedResult(a)}, refusal(ErrVoted, "user %d approved %s already; %s", by, op.ID, QuorumLine(a))
	case errors.Is(err, journal.ErrDecided):
		return Decision{Approval: a}, refusal(ErrDecided, "approval %s was %s", approvalID, a.Decision)
	case errors.Is(err, journal.ErrExpired):
		o.publishDecided(ctx, a)
		r, err := o.finish(ctx, op.ID, expiredResult(a))
		return Decision{Approval: a, Result: r}, err
	case err != nil:
		if refused, ok := o.codeRefused(ctx, op, a, by, err); ok {
			return Decision{Approval: a}, refused
		}
		return Decision{}, fmt.Errorf("operator: %w", err)
	}
	o.publishDecided(ctx, a)
	r := stopResult(report(fmt.Sprintf("rejected by user %d; nothing was sent", by), "", ""))
	r.Cause = action.CauseRejected
	r, err = o.finish(ctx, op.ID, r)
	return Decision{Approval: a, Result: r}, err
}

// expiredResult is the result of an operation whose approval a expired.
func expiredResult(a journal.Approval) action.Result {
	r := stopResult(report("the approval expired at "+a.Expires.Format(time.RFC3339)+"; nothing was sent", "", "issue the command again if it is still wanted"))
	r.Cause = action.CauseApprovalExpired
	return r
}

// Proceed commits an operation Record approved, to its outcome.
func (o *Operator) Proceed(ctx context.Context, d Decision) (action.Result, error) {
	if !d.Approved() {
		return d.Result, nil
	}
	if d.release != nil {
		defer d.release()
	}
	return o.run(ctx, d.Approval.OperationID)
}

// Decide is Record and then Proceed: it records an approver's decision and, when
// approved, runs the commit to its outcome. Its refusals are Record's.
func (o *Operator) Decide(ctx context.Context, approvalID string, by policy.UserID, approve bool) (action.Result, error) {
	d, err := o.Record(ctx, approvalID, by, approve)
	if err != nil {
		return action.Result{}, err
	}
	return o.Proceed(ctx, d)
}

func orNobody(transport string) string {
	if transport == "" {
		return "no transport"
	}
	return transport
}

// finish stores the result of an operation that the journal already moved to its
// final state (a decision moves it in the same transaction as the approval).
func (o *Operator) finish(ctx context.Context, id string, r action.Result) (action.Result, error) {
	r.OperationID = id
	if err := o.opts.Journal.SetResult(ctx, id, r); err != nil {
		return r, fmt.Errorf("operator: %w", err)
	}
	o.publishOutcome(ctx, id, r)
	return r, nil
}

// run drives an approved operation through commit attempts until it reaches an
// outcome: committed, unknown, failed, or a wait the context cut short.
func (o *Operator) run(ctx context.Context, id string) (action.Result, error) {
	defer o.hold(id)()
	if o.opts.Remote {
		return o.handedOver(ctx, id)
	}
	for {
		op, err := o.opts.Journal.Operation(ctx, id)
		if err != nil {
			return action.Result{}, fmt.Errorf("operator: %w", err)
		}
		task, err := o.opts.Journal.Task(ctx, op.TaskID)
		if err != nil {
			return action.Result{}, fmt.Errorf("operator: %w", err)
		}
		var r *action.Result
		switch op.State {
		case journal.Approved:
			r, err = o.attempt(ctx, task, op, journal.Approved)
		case journal.RetryWait:
			if err := o.opts.Clock.Sleep(ctx, op.RetryAt.Sub(o.opts.Clock.Now())); err != nil {
				return pendingRetry(op), err
			}
			r, err = o.attempt(ctx, task, op, journal.RetryWait)
		default:
			return resultOf(op), nil
		}
		if errors.Is(err, journal.ErrStateChanged) {
			continue // cancelled or moved by someone else: look again
		}
		if errors.Is(err, journal.ErrHeld) || errors.Is(err, action.ErrFenced) {
			// Another replica holds it, or took it over while this one was on
			// its way to the wire: nothing was sent here, and what becomes of it
			// is the holder's to record.
			o.opts.Logger.Warn("not sent here: another replica holds the operation", "op", id, "err", err)
			op, rerr := o.opts.Journal.Operation(ctx, id)
			if rerr != nil {
				return action.Result{}, fmt.Errorf("operator: %w", rerr)
			}
			return resultOf(op), nil
		}
		if err != nil || r != nil {
			if r == nil {
				return action.Result{}, err
			}
			return *r, err
		}
	}
}

// attempt makes one write-ahead commit attempt and applies the decision table to its
// outcome. It returns a result when the operation reached an outcome, or nil when it
// should go round again (after a repair or into a retry wait).
func (o *Operator) attempt(ctx context.Context, task journal.Task, op journal.Operation, from journal.State) (*action.Result, error) {
	tool, ok := o.opts.Tools.Get(op.Tool)
	committer, commits := tool.(tools.Committer)
	if !ok || !commits {
		r := stopResult(fmt.Sprintf("tool %s is not offered any more; nothing was sent", op.Tool))
		return o.end(ctx, op, from, journal.Failed, r, "")
	}
	if o.opts.Transport == "" || op.Transport != o.opts.Transport {
		// Another surface's operation: this process may show it, never deliver it.
		// It stays where it is for the process that owns its transport.
		r := resultOf(op)
		return &r, refusal(ErrOtherTransport, "%s is delivered by %s, not by this process", op.ID, orNobody(op.Transport))
	}
	bound, res, refused, err := o.checkBinding(ctx, op, from)
	if refused || err != nil {
		return res, err
	}
	if from == journal.Approved {
		if r, asked, err := o.checkAuthority(ctx, task, op, bound); asked || err != nil {
			return r, err
		}
	}
	if r, changed, err := o.checkHolds(ctx, task, op, from); changed || err != nil {
		return r, err
	}
	stages.Mark(ctx, stages.Checked)
	// Write ahead: committing is durable before the request leaves the process.
	msgs := op.Payload.Messages()
	if err := o.move(ctx, op.ID, journal.Move{From: from, To: journal.Committing, Reason: attemptReason(op, len(msgs)), StartAttempt: true}); err != nil {
		return nil, err
	}
	stages.Mark(ctx, stages.Written)
	// The request is on its way: it is let finish, and its outcome journaled, even
	// when the process is shutting down. Knowing the outcome beats an unknown (and
	// a commit left committing is one at the next start). The sender bounds it.
	ctx = tools.WithOperation(ctx, op.ID) // a request may name it (an HTTP tool's Idempotency-Key)
	// Each request carries its fence: the sender proves that this process still
	// holds the attempt right before it writes (action.CheckFence).
	fence := &journal.Fence{Operation: op.ID, Attempt: op.Attempts + 1}
	ctx = action.WithFence(context.WithoutCancel(ctx), func(ctx context.Context) error {
		return o.opts.Journal.ProveHolding(ctx, *fence)
	})
	ev := action.Evidence{}
	if op.Evidence != nil {
		ev = *op.Evidence
	}
	for k := op.PartsDone; k < len(msgs); k++ {
		if k > op.PartsDone {
			if err := o.opts.Journal.StartAttempt(ctx, op.ID, fmt.Sprintf("part %d/%d", k+1, len(msgs))); err != nil {
				return nil, fmt.Errorf("operator: %w", err)
			}
			fence.Attempt++
		}
		err := action.CheckFence(ctx)
		if err != nil {
			return nil, err
		}
		stages.Mark(ctx, stages.Fenced)
		got, err := committer.Commit(ctx, partPayload(op, msgs[k]))
		if errors.Is(err, action.ErrFenced) {
			return nil, err
		}
		ev.HTTPStatus, ev.Ref = got.HTTPStatus, got.Ref
		if errors.Is(err, tools.ErrAlreadyDone) {
			err = nil // a state-setting call whose state is already set: it is in the world
		}
		if err != nil {
			op.Attempts, op.PartsDone, op.Evidence = op.Attempts+1+k-op.PartsDone, k, &ev
			v := classify(err)
			if v.class == classVerify && len(msgs) == 1 && o.settles(task, tool) {
				if reader, ok := tool.(tools.StateReader); ok {
					return o.settleByReading(ctx, op, reader, v, err)
				}
				return o.settle(ctx, op, committer, fence, v, err)
			}
			return o.decide(ctx, task, op, v, err)
		}
		ev.ChatID, ev.MessageIDs = got.ChatID, append(ev.MessageIDs, got.MessageIDs...)
		if len(msgs) > 1 {
			if err := o.opts.Journal.PartDelivered(ctx, op.ID, k+1, ev); err != nil {
				return nil, fmt.Errorf("operator: %w", err)
			}
		}
	}
	r := action.Result{Status: action.StatusSucceeded, OperationID: op.ID, SideEffect: action.SideEffectCommitted, NextAction: action.NextNone, Evidence: &ev,
		Action: op.Payload.Action}
	if bound.Grant != "" {
		r.Reason = "approved under grant " + bound.Grant // every commit under a grant names it
	}
	err = o.move(ctx, op.ID, journal.Move{From: journal.Committing, To: journal.Committed, Reason: "delivered", Result: &r, AttemptOutcome: "committed"})
	stages.Mark(ctx, stages.Recorded)
	late := errors.Is(err, journal.ErrStateChanged) && o.replica()
	if late {
		// This replica's lease ran out while the request was out (the database
		// was out of reach, the process stalled), and another replica made the
		// commit unknown. The service's answer settles it: delivered.
		err = o.move(ctx, op.ID, journal.Move{From: journal.Unknown, To: journal.Committed, Reason: ReasonLateAnswer, Result: &r})
	}
	if err != nil {
		return &r, err
	}
	if op.Envelope != "" || late {
		// An earlier attempt's note, or the leader's note of the unknown this
		// answer settles, must not invite a resend.
		o.envelopeDelivered(op.ID)
	}
	o.publishOutcome(ctx, op.ID, r)
	return &r, nil
}

// ReasonLateAnswer is the reason of the move from unknown to committed that a
// replica makes when the service confirmed its delivery after its lease had run
// out and another replica had made the outcome unknown (journal.ReasonLeaseExpired).
const ReasonLateAnswer = "delivered: the service answered after the sending replica's lease ran out"

// partPayload is the payload of one message of an operation, repairs applied.
func partPayload(op journal.Operation, text string) action.Payload {
	p := op.Payload
	p.Text, p.Parts = text, nil
	if op.Fix != nil {
		p = op.Fix.Apply(p)
	}
	return p
}

func attemptReason(op journal.Operation, parts int) string {
	if parts > 1 {
		return fmt.Sprintf("attempt %d, part %d/%d", op.Attempts+1, op.PartsDone+1, parts)
	}
	return fmt.Sprintf("attempt %d", op.Attempts+1)
}

// checkBinding refuses to commit a payload that is not the one approved.
// It returns the approval the commit goes out under.
func (o *Operator) checkBinding(ctx context.Context, op journal.Operation, from journal.State) (journal.Approval, *action.Result, bool, error) {
	a, err := o.opts.Journal.LatestApproval(ctx, op.ID)
	if err != nil && !errors.Is(err, journal.ErrNotFound) {
		return a, nil, true, fmt.Errorf("operator: %w", err)
	}
	if err == nil && a.Decision == journal.DecideApprove && a.PayloadSHA256 == op.Payload.SHA256() {
		return a, nil, false, nil
	}
	r := stopResult(report("the payload is not the one approved (its hash changed); nothing was sent", "", "ask for a new approval"))
	res, err := o.end(ctx, op, from, journal.Failed, r, "")
	return a, res, true, err
}

// checkHolds reads again, before the write ahead, what the card showed beside
// the payload's own bytes, since what was approved is no longer what would
// happen once it changed: the message op acts on or takes, as its payload
// quoted it (tools.StillQuoted), the chat it reaches by name and kind
// (tools.StillAudience), and this bot's right to post there
// (tools.StillMayPost). A message edited, or a chat renamed or of another kind,
// since is asked again of the approvers (requote), the payload quoting it as
// it is now and the card saying what changed. A message deleted since, or a
// change met on a retry, ends op with nothing sent and a repair to make; so
// does a right to post lost, which no approval can give back. A read that does
// not get through is retried as a send that did not leave (readFailed).
func (o *Operator) checkHolds(ctx context.Context, task journal.Task, op journal.Operation, from journal.State) (*action.Result, bool, error) {
	if from != journal.Approved && from != journal.RetryWait {
		return nil, false, nil
	}
	c, err := tools.StillQuoted(ctx, op.Payload, History{Journal: o.opts.Journal, Clock: o.opts.Clock, Transport: o.opts.Transport})
	if err != nil {
		return nil, false, err
	}
	// A chat Telegram said moved (a group that became a supergroup) is
	// written to where it went by a repair (Fix.Target): its members went with
	// it, and the send is made there without asking again. A text whose first
	// parts are in the chat already is finished as it began.
	tool, _ := o.opts.Tools.Get(op.Tool)
	chats, moved, begun := o.opts.Tools.Chats(), op.Fix != nil && op.Fix.Target != "", op.PartsDone > 0
	reread := !moved && !begun
	if reread {
		a, err := tools.StillAudience(ctx, chats, tool, op.Payload)
		if err != nil {
			return o.readFailed(ctx, task, op, from, err)
		}
		c = c.And(a)
	}
	if c.Words == "" && reread {
		lost, err := tools.StillMayPost(ctx, chats, tool, op.Payload)
		if err != nil {
			return o.readFailed(ctx, task, op, from, err)
		}
		if lost != "" {
			r := stopResult(report(lost+"; nothing was sent", "", "give the bot the right to post there again (or add it back to the chat), then make the call again"))
			r.Cause = action.CauseChanged
			res, err := o.end(ctx, op, from, journal.Failed, r, "")
			return res, true, err
		}
	}
	if c.Words == "" {
		return nil, false, nil
	}
	if !c.Gone && from == journal.Approved {
		if r, asked, err := o.requote(ctx, task, op, c); asked || err != nil {
			return r, true, err
		}
	}
	again := "make the call again from the message as it reads now, for a new approval"
	if !c.Edited && !c.Gone {
		again = "make the call again to the chat as it is now, for a new approval"
	}
	r := repairable(report(c.Words+"; nothing was sent", "", again))
	r.Cause = action.CauseChanged
	res, err := o.end(ctx, op, from, journal.Failed, r, "")
	return res, true, err
}

// readFailed is what becomes of op when a read before its write ahead (the
// chat it reaches, the bot's right there) fails, classified as a send's
// failure: nothing was sent, so a read that did not get through is retried
// (a retry wait, paid from the retry budget), and a refusal (a chat the bot
// cannot see any more) ends op failed with what to repair. op is never sent
// on an answer not read.
func (o *Operator) readFailed(ctx context.Context, task journal.Task, op journal.Operation, from journal.State, err error) (*action.Result, bool, error) {
	v := classify(err)
	v.reason = "the chat could not be read again before the send: " + v.reason
	if v.class == classStop || v.class == classRepair {
		r := stopResult(report(v.reason+"; nothing was sent", "", "fix the cause (rights, chat, block) and send again"))
		res, err := o.end(ctx, op, from, journal.Failed, r, err.Error())
		return res, true, err
	}
	res, err := o.scheduleRetry(ctx, task, op, from, v, err.Error())
	return res, true, err
}

// ReasonRequoted is the reason of the move from approved back to awaiting
// approval when what the payload quotes (the message it acts on, the chat it
// reaches) changed since it was approved.
const ReasonRequoted = "approval requested again: what its card showed changed since it was approved"

// requote asks again for approved op, whose quoted message or chat changed as
// c says: its payload quotes them as they are now (a new hash, so the approval
// given binds nothing here any more), the verifier checks it, and a new
// approval is asked for, in one move the audit chain records. A payload the
// verifier does not pass is not asked again (asked false).
func (o *Operator) requote(ctx context.Context, task journal.Task, op journal.Operation, c tools.Change) (*action.Result, bool, error) {
	next := op
	next.Payload = tools.Requote(op.Payload, c)
	next.PayloadSHA256 = next.Payload.SHA256()
	if v := o.verify(ctx, task, next); v.Decision != verifier.Pass {
		return nil, false, nil
	}
	a := o.newApproval(task, next)
	m := askApproval(journal.Approved, a)
	m.Reason, m.Payload = ReasonRequoted+": "+c.Words, &next.Payload
	if err := o.move(ctx, op.ID, m); err != nil {
		return nil, true, err // moved on meanwhile (ErrStateChanged): run looks again
	}
	next.State = journal.AwaitingApproval
	res, err := o.asked(ctx, task, next, a)
	if err == nil && res.Status == action.StatusPending {
		res.Cause, res.Reason = action.CauseChanged, c.Words+"; nothing was sent, and it is "+res.Reason
	}
	return &res, true, err
}

// decide applies the decision table to a failed attempt.
func (o *Operator) decide(ctx context.Context, task journal.Task, op journal.Operation, v verdict, cause error) (*action.Result, error) {
	detail := cause.Error()
	switch v.class {
	case classRetry:
		return o.scheduleRetry(ctx, task, op, journal.Committing, v, detail)
	case classRepair:
		return o.repair(ctx, task, op, v, detail)
	case classVerify:
		return o.unknown(ctx, op, v.reason, detail)
	}
	r := stopResult(report("the service refused: "+v.reason+"; nothing was sent", "", "fix the cause (rights, chat, block) and send again"))
	return o.end(ctx, op, journal.Committing, journal.Failed, r, detail)
}

// scheduleRetry moves op from where it is (committing after an attempt, or
// approved or waiting for a retry when a read before the write ahead did not
// get through) to a retry wait, paid from the task's retry budget; past the
// budget it ends failed.
func (o *Operator) scheduleRetry(ctx context.Context, task journal.Task, op journal.Operation, from journal.State, v verdict, detail string) (*action.Result, error) {
	wait := backoff(task.Policy.Backoff, task.RetriesUsed, v.retryAfter, o.opts.Rand())
	at := o.opts.Clock.Now().Add(wait)
	r := action.Result{Status: action.StatusRetryable, OperationID: op.ID, SideEffect: action.SideEffectNone,
		NextAction: action.NextRetry, RetryAfterMS: wait.Milliseconds(), Reason: v.reason}
	// The retry is paid in the move that schedules it: two commits of one task
	// racing for the last retry cannot both have it, and neither is left committing.
	m := journal.Move{From: from, To: journal.RetryWait,
		Reason: fmt.Sprintf("retry in %s: %s", wait, v.reason), RetryAt: at, Result: &r, Spend: &journal.Spend{Retry: true, Wait: wait}}
	if from == journal.Committing {
		m.AttemptOutcome, m.AttemptDetail = "retry", detail
	}
	err := o.record(ctx, op.ID, m)
	var budget *journal.BudgetError
	if !errors.As(err, &budget) {
		if err != nil {
			return nil, fmt.Errorf("operator: %w", err)
		}
		return nil, nil
	}
	known := fmt.Sprintf("%d attempts, none delivered (%s)", op.Attempts, v.reason)
	if v.retryAfter > 0 && errors.Is(err, journal.ErrWaitBudget) {
		known = fmt.Sprintf("the service asked to wait %s, more than the wait budget allows; nothing was sent", v.retryAfter)
	}
	r = stopResult(report(known, "", "send again later"))
	r.RetryAfterMS, r.Cause = v.retryAfter.Milliseconds(), action.CauseBudget
	r.Reason = budget.Error() + ": " + r.Reason
	return o.end(ctx, op, from, journal.Failed, r, detail)
}

func (o *Operator) repair(ctx context.Context, task journal.Task, op journal.Operation, v verdict, detail string) (*action.Result, error) {
	if v.fix == nil {
		r := repairable(report("the service refused the request as malformed: "+v.reason+"; nothing was sent", "", "repair the request and call again"))
		return o.end(ctx, op, journal.Committing, journal.Failed, r, detail)
	}
	fix := *v.fix
	if op.Fix != nil { // repairs add up: a migrated chat stays migrated
		fix = mergeFix(*op.Fix, fix)
	}
	err := o.record(ctx, op.ID, journal.Move{From: journal.Committing, To: journal.Approved,
		Reason: "repair: " + v.reason, Fix: &fix, AttemptOutcome: "repair", AttemptDetail: detail, Spend: &journal.Spend{Repair: true}})
	var budget *journal.BudgetError
	if !errors.As(err, &budget) {
		if err != nil {
			return nil, fmt.Errorf("operator: %w", err)
		}
		return nil, nil
	}
	r := stopResult(report("the service refused the request again after a repair: "+v.reason+"; nothing was sent", "", "fix the request by hand"))
	r.Cause, r.Reason = action.CauseBudget, budget.Error()+": "+r.Reason
	return o.end(ctx, op, journal.Committing, journal.Failed, r, detail)
}

func mergeFix(a, b action.Fix) action.Fix {
	if b.Target == "" {
		b.Target = a.Target
	}
	b.PlainText = b.PlainText || a.PlainText
	return b
}

// unknown records an outcome nobody can know: no resend until someone verifies.
func (o *Operator) unknown(ctx context.Context, op journal.Operation, why, detail string) (*action.Result, error) {
	r := unknownResult(op, why)
	if err := o.move(ctx, op.ID, journal.Move{From: journal.Committing, To: journal.Unknown, Reason: why, Result: &r, AttemptOutcome: "unknown", AttemptDetail: detail}); err != nil {
		return nil, err
	}
	o.envelope(ctx, op.ID, why)
	o.publishOutcome(ctx, op.ID, r)
	return &r, nil
}

// unknownResult says what is known and not known of an operation whose last send
// may or may not have arrived, and how to resolve it.
func unknownResult(op journal.Operation, why string) action.Result {
	p := op.Payload
	known, which := "the request was sent ("+why+")", "the message"
	unknown, look := "whether "+which+" was delivered", ""
	switch n := len(p.Messages()); {
	case p.Request != nil: // an HTTP call: its effect is at the service
		unknown = "whether the call took effect"
		look = fmt.Sprintf("check at %s whether the %s took effect (countersign ops show %s says exactly what it does)", p.Target, p.Action, op.ID)
	case p.MessageID != 0 && p.From == "": // an action on a message already sent
		unknown = "whether the " + p.Action + " took effect"
		look = fmt.Sprintf("check message %d in chat %s for the %s", p.MessageID, p.Target, p.Action)
	case len(p.Files) > 1:
		unknown = fmt.Sprintf("whether the %d items were delivered", len(p.Files))
		look = fmt.Sprintf("look for each of the %d items in chat %s", len(p.Files), p.Target)
	case n > 1:
		known = fmt.Sprintf("parts 1-%d of %d were delivered; part %d was sent (%s)", op.PartsDone, n, op.PartsDone+1, why)
		which = fmt.Sprintf("part %d", op.PartsDone+1)
		unknown = "whether " + which + " was delivered"
	}
	if look == "" {
		look = fmt.Sprintf("look for %s in chat %s", which, p.Target)
	}
	return action.Result{Status: action.StatusTerminal, OperationID: op.ID, SideEffect: action.SideEffectUnknown, NextAction: action.NextVerify,
		Evidence: op.Evidence, Reason: report(known, unknown, fmt.Sprintf("%s, then /resolve %s delivered|not_delivered", look, op.ID))}
}

// end moves an operation to a final state with its result.
func (o *Operator) end(ctx context.Context, op journal.Operation, from, to journal.State, r action.Result, detail string) (*action.Result, error) {
	r.OperationID = op.ID
	m := journal.Move{From: from, To: to, Reason: r.Reason, Result: &r}
	if from == journal.Committing {
		m.AttemptOutcome, m.AttemptDetail = "stop", detail
	}
	if err := o.move(ctx, op.ID, m); err != nil {
		return &r, err
	}
	o.publishOutcome(ctx, op.ID, r)
	return &r, nil
}
