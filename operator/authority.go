package operator

import (
	"context"

	"github.com/countersign/countersign/action"
	"github.com/countersign/countersign/journal"
	"github.com/countersign/countersign/policy"
)

// A commit is authorised by two policies at once: the snapshot its task started
// under, and the policy of the process that sends it (Options.Policy, the policy
// in force here). The snapshot may come from another process (a `countersign mcp` given
// a -policies of its own) or from a file edited since: neither may widen what the
// sender allows now. So an approval needs a tap unless both policies waive it,
// only a person who is an approver in both may decide, and an approval granted
// elsewhere (an auto_approve rule of another process, an approver removed since)
// is asked for again here before anything is sent.

// needsApproval reports whether a commit of op needs a person's tap: when the
// task's snapshot or the policy in force here asks for one.
func (o *Operator) needsApproval(task journal.Task, op journal.Operation) bool {
	return task.Policy.NeedsApproval(op.Tool, op.Payload.Target) || o.opts.Policy.NeedsApproval(op.Tool, op.Payload.Target) ||
		o.required(task, op) > 1 || // a quorum is never waived by an auto_approve rule
		o.stepUp(task, op) != policy.NoFactor // nor a second factor
}

// stepUp is the second factor each approver of op gives beside the tap: the
// strongest the task's snapshot or the policy in force here asks.
func (o *Operator) stepUp(task journal.Task, op journal.Operation) policy.Factor {
	return policy.Strongest(task.Policy.StepUp(op.Tool, op.Payload.Target), o.opts.Policy.StepUp(op.Tool, op.Payload.Target))
}

// StepUpOf is the second factor each approver of approval a, of op in task,
// gives beside the tap now: the stronger of what a asked when it was made
// and what the task's snapshot and the policy in force here ask. It is the
// factor the journal refuses a tap without (Record), so a surface that shows
// an approval before any tap (a card, the review page) shows and asks this
// one, not a.StepUp, which a policy may ask more than since.
func (o *Operator) StepUpOf(task journal.Task, op journal.Operation, a journal.Approval) policy.Factor {
	return policy.Strongest(a.StepUp, o.stepUp(task, op))
}

// mayApprove reports whether user may decide the approvals of task: an approver
// of the policy the task started under and of the policy in force here.
func (o *Operator) mayApprove(task journal.Task, user policy.UserID) bool {
	return task.Policy.Access.IsApprover(user) && o.opts.Policy.Access.IsApprover(user)
}

// ownRequest reports whether user asked for task and one of its two policies
// says self_approval: false: then user may reject the task's requests, never
// approve them, whether by a tap, a vote of a quorum or a grant.
func (o *Operator) ownRequest(task journal.Task, user policy.UserID) bool {
	return task.Requester != 0 && user == task.Requester &&
		(!task.Policy.SelfApprovalAllowed() || !o.opts.Policy.SelfApprovalAllowed())
}

// ReasonAskedAgain is the reason of the move from approved back to awaiting
// approval that the sending process makes when its own policy does not allow the
// approval the operation carries.
const ReasonAskedAgain = "approval requested again: the sender's policy does not allow the approval given"

// checkAuthority checks, before an approved operation is sent, that its approval
// holds under the policy in force here too: an auto-approval needs both policies
// to waive the tap, a person's approval needs them among the approvers of both.
// When it does not hold, the operation goes back to awaiting approval with a new
// approval for the approvers (asked is true, r the pending result): nothing is
// sent until a person allowed here taps. a is the operation's latest approval,
// as checkBinding read it.
func (o *Operator) checkAuthority(ctx context.Context, task journal.Task, op journal.Operation, a journal.Approval) (r *action.Result, asked bool, err error) {
	if a.DecidedBy == journal.ByPolicy && !o.needsApproval(task, op) ||
		a.DecidedBy != journal.ByPolicy && o.approvedEnough(task, op, a) {
		return nil, false, nil
	}
	o.opts.Logger.Warn("approval not allowed by this process's policy; asking again", "op", op.ID, "decided_by", a.DecidedBy)
	next := o.newApproval(task, op)
	m := askApproval(journal.Approved, next)
	m.Reason = ReasonAskedAgain
	if err := o.move(ctx, op.ID, m); err != nil {
		return nil, true, err // moved on meanwhile (ErrStateChanged): run looks again
	}
	op.State = journal.AwaitingApproval
	res, err := o.asked(ctx, task, op, next)
	return &res, true, err
}

// Approvers returns who may approve the requests of task, in the order of its
// snapshot: the approvers of both its policy and the policy in force, but the
// requester where self-approval is off. A card goes to them, and only their
// approvals are recorded.
func (o *Operator) Approvers(task journal.Task) []policy.UserID {
	return o.approversOf(task, true)
}

// Verifiers returns who is asked whether an unknown outcome of task arrived
// (the It arrived / It did not arrive question, and its reminders): the
// approvers of both its policy and the policy in force, the requester among
// them even where self-approval is off, since saying what happened approves
// nothing.
func (o *Operator) Verifiers(task journal.Task) []policy.UserID {
	return o.approversOf(task, false)
}

// approversOf is the approvers of both task's policy and the policy in force,
// in the order of the task's snapshot; without the requester where
// self-approval is off, when exceptOwn.
func (o *Operator) approversOf(task journal.Task, exceptOwn bool) []policy.UserID {
	var both []policy.UserID
	for _, id := range task.Policy.Access.Approvers {
		if o.opts.Policy.Access.IsApprover(id) && !(exceptOwn && o.ownRequest(task, id)) {
			both = append(both, id)
		}
	}
	return both
}
