package operator

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/countersign/countersign/action"
	"github.com/countersign/countersign/journal"
	"github.com/countersign/countersign/policy"
	"github.com/countersign/countersign/tools"
	"github.com/countersign/countersign/verifier"
)

// Approvals beyond one tap. A quorum (policy approvals) asks that many
// different approvers to approve one payload: each approval is a vote, any
// rejection ends it. An approval nobody decided within escalate_after of its
// time goes to the escalation list too. An approver may correct the text of a
// payload before approving it (Edit): the old approval is void, the new payload
// is verified like any other and gets an approval of its own. A grant is an
// approver's explicit consent to more than one commit: a task's waiting
// approvals listed on one card (GrantTask), or a tool to a target for a time
// (GrantWindow). Like every decision, each is checked against both policies
// (authority.go) and journaled in the audit trail.

// Refusals of the requests in this file, beside those of Record.
var (
	// ErrVoted refuses a second approval by the same approver of a quorum.
	ErrVoted = errors.New("already approved by this approver")
	// ErrNotEditable refuses an edit of a payload with no text to correct.
	ErrNotEditable = errors.New("payload has no text to edit")
	// ErrEditRefused refuses an edit the verifier does not pass; the payload
	// and its approval stay as they were.
	ErrEditRefused = errors.New("edit refused by the verifier")
	// ErrGrant refuses a grant: grants off in the policy, too long, a tool or
	// target a grant may not cover, or a card's list that changed since.
	ErrGrant = errors.New("grant refused")
)

// required is how many different approvers a commit of op needs: the most the
// task's snapshot or the policy in force asks.
func (o *Operator) required(task journal.Task, op journal.Operation) int {
	return max(task.Policy.Approvals(op.Tool, op.Payload.Target), o.opts.Policy.Approvals(op.Tool, op.Payload.Target))
}

// newApproval is an approval of op for its task, for as many approvers as
// required.
func (o *Operator) newApproval(task journal.Task, op journal.Operation) *journal.Approval {
	a := o.opts.Journal.NewApprovalOf(op, task.Requester, task.Policy.ApprovalTTL, o.required(task, op), o.stepUp(task, op))
	if o.showsHere(op) {
		// Published by the request that asks, right after it is stored: the
		// watch leaves it to that request (showLate).
		a.Shown, a.ShownBy = a.Created, o.self
	}
	return a
}

// mayDecide reports whether user may decide approval a of task: an approver of
// both policies, or, once a was escalated, one on the escalation list of both.
func (o *Operator) mayDecide(task journal.Task, a journal.Approval, user policy.UserID) bool {
	if o.mayApprove(task, user) {
		return true
	}
	return !a.Escalated.IsZero() && task.Policy.Access.IsEscalation(user) && o.opts.Policy.Access.IsEscalation(user)
}

// Escalation returns who an escalated approval of task goes to, beside its
// approvers: those on the escalation list of both policies.
func (o *Operator) Escalation(task journal.Task) []policy.UserID {
	var both []policy.UserID
	for _, id := range task.Policy.Access.Escalation {
		if o.opts.Policy.Access.IsEscalation(id) && !o.mayApprove(task, id) {
			both = append(both, id)
		}
	}
	return both
}

// approvedEnough reports whether approval a (approved) holds for op under the
// policy in force: as many of its approvers as op now needs may still decide,
// each of whom gave the second factor op now asks, if it asks one (an
// approval given before step_up was set counts for nothing).
func (o *Operator) approvedEnough(task journal.Task, op journal.Operation, a journal.Approval) bool {
	voters := []policy.UserID{a.DecidedBy}
	factor := o.stepUp(task, op)
	if len(a.Votes) > 0 || factor != policy.NoFactor {
		voters = voters[:0]
		for _, v := range a.Votes {
			if v.StepUp.Covers(factor) {
				voters = append(voters, v.By)
			}
		}
	}
	n := 0
	for _, by := range voters {
		if o.mayDecide(task, a, by) && !o.ownRequest(task, by) {
			n++
		}
	}
	return n >= o.required(task, op)
}

// votedResult is the result of an operation whose quorum is not reached yet.
func votedResult(a journal.Approval) action.Result {
	return action.Result{Status: action.StatusPending, OperationID: a.OperationID, SideEffect: action.SideEffectPrepared,
		NextAction: action.NextAwaitApproval, Cause: action.CauseQuorum, Reason: QuorumLine(a)}
}

// QuorumLine says where a quorum stands: "approved by 42 (1 of 2); 1 more
// approver needed". "" for an approval that needs one.
func QuorumLine(a journal.Approval) string {
	if a.Required <= 1 {
		return ""
	}
	var by []string
	for _, v := range a.Votes {
		by = append(by, fmt.Sprint(v.By))
	}
	if len(by) == 0 {
		return fmt.Sprintf("needs %d different approvers; none approved yet", a.Required)
	}
	return fmt.Sprintf("approved by %s (%d of %d); %d more approver(s) needed", strings.Join(by, ", "), len(a.Votes), a.Required, a.Missing())
}

// grantFor approves a, just asked, under a window grant in force that covers
// op, when the policy in force allows grants and a needs one approver; the
// granter must still be an approver of both policies. It reports whether it
// did; the commit is then the caller's to run.
func (o *Operator) grantFor(ctx context.Context, task journal.Task, op journal.Operation, a *journal.Approval) (bool, error) {
	if o.opts.Policy.GrantMax <= 0 || a.Required > 1 {
		return false, nil
	}
	if op.Payload.From != "" {
		return false, nil // a forward or a copy brings another chat's message: never under a grant
	}
	now := o.opts.Clock.Now()
	g, ok, err := o.opts.Journal.WindowGrantFor(ctx, op.Tool, grantTarget(op.Payload.Target), now)
	if err != nil || !ok {
		return false, err
	}
	if a.StepUp != policy.NoFactor || o.stepUp(task, op) != policy.NoFactor {
		// Made before step_up was set, or for a target a rule has asked a
		// factor of since: each commit asks its approver's code.
		o.opts.Logger.Info("grant not used: a second factor is asked of each approval", "grant", g.ID, "op", op.ID)
		return false, nil
	}
	// The newest grant is the last to reach the policy's grant_max: when it is
	// past it, so is every older one.
	if g = o.cut(g); !g.InForce(now) {
		o.opts.Logger.Info("grant not used: it is older than the policy's grant_max", "grant", g.ID, "grant_max", o.opts.Policy.GrantMax, "op", op.ID)
		return false, nil
	}
	if !o.mayApprove(task, g.By) {
		o.opts.Logger.Warn("grant not used: its granter is no approver of this task under both policies", "grant", g.ID, "by", g.By, "op", op.ID)
		return false, nil
	}
	// Counted as the sender counts an approval before it sends
	// (checkAuthority): one it would not count would be asked again, and
	// granted again, without end.
	if !o.approvedEnough(task, op, journal.Approval{DecidedBy: g.By}) {
		o.opts.Logger.Info("grant not used: its approval would not count here (its granter asked for this, and self-approval is off)", "grant", g.ID, "by", g.By, "op", op.ID)
		return false, nil
	}
	d, err := o.opts.Journal.DecideBallot(ctx, a.ID, journal.Ballot{Decision: journal.DecideApprove, By: g.By, Grant: g.ID, StepUp: o.stepUp(task, op)})
	switch {
	case errors.Is(err, journal.ErrGrantEnded):
		return false, nil // revoked in the meantime: a card, as without it
	case err != nil:
		return false, fmt.Errorf("operator: approve %s under grant %s: %w", op.ID, g.ID, err)
	}
	o.opts.Logger.Info("approved under a grant", "op", op.ID, "grant", g.ID, "by", g.By)
	o.publishDecided(ctx, d)
	return true, nil
}

// cut is window grant g as the policy in force lets it stand: no longer than
// grant_max from when it was made. A grant made under a longer grant_max ends
// when the lowered one says; the journal keeps the time it was given for.
func (o *Operator) cut(g journal.Grant) journal.Grant {
	if end := g.Created.Add(o.opts.Policy.GrantMax); end.Before(g.Until) {
		g.Until = end
	}
	return g
}

// grantTarget is a target as a grant names it: the chat it names (policy's
// NormalizeTarget), or as given when it is no chat (an HTTP tool's host).
func grantTarget(target string) string {
	if t, err := policy.NormalizeTarget(target); err == nil {
		return t
	}
	return target
}

// Edited is what an edit before approval did.
type Edited struct {
	Edit      journal.Edit
	Operation journal.Operation // with the new payload
	Approval  journal.Approval  // the new approval, of the new payload
}

// Edit replaces the text of the payload that waits on approval approvalID with
// text, in by's name: the tool says how (tools.Revise), the verifier checks the
// new payload like any other, and the journal voids the approval, keeps the old
// payload and asks a new approval of the new one, in one transaction
// (journal.EditPayload). The requester and the approvers hear of it through
// events (PayloadEdited, then ApprovalNeeded). Refusals change nothing and are
// *Refusal errors: those of Record, ErrNotEditable, ErrEditRefused.
func (o *Operator) Edit(ctx context.Context, approvalID string, by policy.UserID, text string) (Edited, error) {
	a, op, task, err := o.approvalOf(ctx, approvalID)
	if err != nil {
		return Edited{}, err
	}
	switch {
	case !o.mayDecide(task, a, by):
		return Edited{}, refusal(ErrNotApprover, "user %d may not edit %s: only its approvers may", by, op.ID)
	case op.Transport != o.opts.Transport:
		return Edited{}, refusal(ErrOtherTransport, "%s is delivered by %s; edit it there", op.ID, orNobody(op.Transport))
	case a.Decision != journal.Pending:
		return Edited{}, refusal(ErrDecided, "approval %s was %s", approvalID, a.Decision)
	case strings.TrimSpace(text) == "":
		return Edited{}, refusal(ErrNotEditable, "the new text is empty")
	}
	tool, _ := o.opts.Tools.Get(op.Tool)
	p, err := tools.Revise(tool, op.Payload, text)
	if err != nil {
		return Edited{}, refusal(ErrNotEditable, "%s (%s): %v", op.ID, op.Payload.Action, err)
	}
	p.Changed = op.Payload.Changed // the reason the request gave to ask again stays on its card
	if p.SHA256() == op.Payload.SHA256() {
		return Edited{}, refusal(ErrNotEditable, "the new text is the text the card shows")
	}
	next := op
	next.Payload, next.PayloadSHA256 = p, p.SHA256()
	// An approver's edit is a person's own text, never a request asked again
	// after a rejection: the rejected check does not hold it back.
	checked := next
	if checked.Payload.Changed == "" {
		checked.Payload.Changed = fmt.Sprintf("edited by approver %d", by)
	}
	if v := o.verify(ctx, task, checked); v.Decision != verifier.Pass {
		return Edited{}, refusal(ErrEditRefused, "the verifier did not pass the edit (%s); the card stands as it was", strings.Join(v.Reasons, "; "))
	}
	na := o.newApproval(task, next)
	e, err := o.opts.Journal.EditPayload(ctx, a.ID, p, by, na)
	switch {
	case errors.Is(err, journal.ErrDecided):
		cur, _ := o.opts.Journal.Approval(ctx, a.ID)
		return Edited{}, refusal(ErrDecided, "approval %s was %s first", approvalID, cur.Decision)
	case errors.Is(err, journal.ErrExpired):
		return Edited{}, refusal(ErrDecided, "approval %s expired", approvalID)
	case err != nil:
		return Edited{}, fmt.Errorf("operator: %w", err)
	}
	old, _ := o.opts.Journal.Approval(ctx, a.ID)
	o.publishDecided(ctx, old)
	next = o.current(ctx, op.ID)
	r := action.Result{Status: action.StatusPending, OperationID: op.ID, SideEffect: action.SideEffectPrepared, NextAction: action.NextAwaitApproval,
		Reason: EditLine(e) + "; awaiting approval " + na.ID}
	if err := o.opts.Journal.SetResult(ctx, op.ID, r); err != nil {
		o.opts.Logger.Warn("edit's result not stored", "op", op.ID, "err", err)
	}
	o.publish(Event{Kind: PayloadEdited, Operation: next, Approval: na, Edit: &e})
	o.publishAsked(ctx, next, *na)
	return Edited{Edit: e, Operation: next, Approval: *na}, nil
}

// EditLine says what an edit did, for the requester and for the result.
func EditLine(e journal.Edit) string {
	return fmt.Sprintf("the payload was edited by %d before approval (sha256 %s -> %s)", e.By, e.OldSHA256[:12], e.NewSHA256[:12])
}

// approvalOf reads approval id with its operation and task; an unknown id is
// ErrNoSuchApproval.
func (o *Operator) approvalOf(ctx context.Context, id string) (journal.Approval, journal.Operation, journal.Task, error) {
	a, err := o.opts.Journal.Approval(ctx, id)
	if errors.Is(err, journal.ErrNotFound) {
		return a, journal.Operation{}, journal.Task{}, refusal(ErrNoSuchApproval, "no approval %s", id)
	}
	if err != nil {
		return a, journal.Operation{}, journal.Task{}, fmt.Errorf("operator: %w", err)
	}
	op, err := o.opts.Journal.Operation(ctx, a.OperationID)
	if err != nil {
		return a, op, journal.Task{}, fmt.Errorf("operator: %w", err)
	}
	task, err := o.opts.Journal.Task(ctx, op.TaskID)
	if err != nil {
		return a, op, task, fmt.Errorf("operator: %w", err)
	}
	return a, op, task, nil
}

// escalate sends to the escalation list the approvals of this transport that
// nobody decided within escalate_after of their time (the policy in force
// here), once each: the journal records the escalation, and an
// ApprovalEscalated event asks the surfaces to show the card to the list.
func (o *Operator) escalate(ctx context.Context) {
	p := o.opts.Policy
	if p.EscalateAfter <= 0 || len(p.Access.Escalation) == 0 || len(o.listeners()) == 0 {
		return
	}
	due, err := o.opts.Journal.Unescalated(ctx, o.opts.Transport, p.EscalateAfter, o.opts.Clock.Now())
	if err != nil {
		o.warn(ctx, "approvals to escalate not read", err)
		return
	}
	for _, a := range due {
		a, done, err := o.opts.Journal.Escalate(ctx, a.ID)
		if err != nil || !done {
			if err != nil {
				o.warn(ctx, "approval not escalated", err)
			}
			continue
		}
		op := o.current(ctx, a.OperationID)
		o.opts.Logger.Info("approval escalated: nobody decided it in time", "approval", a.ID, "op", op.ID)
		o.publish(Event{Kind: ApprovalEscalated, Operation: op, Approval: &a, Late: true})
	}
}

// GrantWindow journals a window grant by user: commits of tool to target
// approved in user's name, without a tap, for d (at most the policy's
// grant_max), until revoked. Only an approver of the policy in force may grant,
// only a commit tool the policy declares, and only where one approver is
// enough (a quorum is never granted away).
func (o *Operator) GrantWindow(ctx context.Context, user policy.UserID, tool, target string, d time.Duration) (journal.Grant, error) {
	p := o.opts.Policy
	t, declared := p.Tool(tool)
	target = grantTarget(target)
	switch {
	case !p.Access.IsApprover(user):
		return journal.Grant{}, refusal(ErrNotApprover, "user %d is not an approver: only approvers may grant", user)
	case p.GrantMax <= 0:
		return journal.Grant{}, refusal(ErrGrant, "grants are off: the policy's grant_max is 0")
	case d <= 0 || d > p.GrantMax:
		return journal.Grant{}, refusal(ErrGrant, "a grant lasts more than 0 and at most grant_max (%s), not %s", p.GrantMax, d)
	case !declared || t.SideEffect != policy.SideEffectCommitted:
		return journal.Grant{}, refusal(ErrGrant, "%q is not a commit tool of the policy", tool)
	case o.reposts(tool):
		return journal.Grant{}, refusal(ErrGrant, "%s takes a message from another chat, which no card would show: it is never granted, each one asks", tool)
	case p.Approvals(tool, target) > 1:
		return journal.Grant{}, refusal(ErrGrant, "%s to %s needs %d approvers: a grant by one cannot stand for them", tool, target, p.Approvals(tool, target))
	case p.StepUp(tool, target) != policy.NoFactor:
		return journal.Grant{}, refusal(ErrGrant, "%s to %s asks a second factor (%s) of each approval: a grant cannot give it ahead", tool, target, p.StepUp(tool, target))
	}
	g, err := o.opts.Journal.GrantWindow(ctx, user, tool, target, o.opts.Clock.Now().Add(d))
	if err != nil {
		return g, fmt.Errorf("operator: %w", err)
	}
	o.opts.Logger.Info("grant made", "grant", g.ID, "by", user, "tool", tool, "target", target, "until", g.Until)
	return g, nil
}

// Revoke ends window grant id, in user's name (an approver).
func (o *Operator) Revoke(ctx context.Context, user policy.UserID, id string) (journal.Grant, error) {
	if !o.opts.Policy.Access.IsApprover(user) {
		return journal.Grant{}, refusal(ErrNotApprover, "user %d is not an approver: only approvers may revoke", user)
	}
	g, err := o.opts.Journal.RevokeGrant(ctx, id, user)
	switch {
	case errors.Is(err, journal.ErrNotFound):
		return g, refusal(ErrGrant, "no grant %s", id)
	case errors.Is(err, journal.ErrGrantEnded):
		return g, refusal(ErrGrant, "grant %s has ended already", id)
	case err != nil:
		return g, fmt.Errorf("operator: %w", err)
	}
	o.opts.Logger.Info("grant revoked", "grant", id, "by", user)
	return g, nil
}

// Grants returns the window grants in force, each ending when the policy's
// grant_max ends it (cut) if that is sooner than it was given for.
func (o *Operator) Grants(ctx context.Context) ([]journal.Grant, error) {
	now := o.opts.Clock.Now()
	gs, err := o.opts.Journal.WindowGrants(ctx, now)
	if err != nil {
		return nil, fmt.Errorf("operator: %w", err)
	}
	in := gs[:0]
	for _, g := range gs {
		if g = o.cut(g); g.InForce(now) {
			in = append(in, g)
		}
	}
	return in, nil
}

// reposts reports whether tool, as this operator's registry has it, puts a
// message from another chat into its target (a forward, a copy).
func (o *Operator) reposts(tool string) bool {
	t, ok := o.opts.Tools.Get(tool)
	return ok && tools.Reposts(t)
}

// TaskGrant is what one card offers to approve at once: the approvals of a
// task that wait, each with its operation and payload hash, and the digest of
// that list that the card's button carries.
type TaskGrant struct {
	Task   string
	Items  []journal.GrantItem
	Digest string
}

// OfferTask lists the approvals of task that user may decide and that wait, of
// operations this operator delivers: what a card of "approve all N" shows.
func (o *Operator) OfferTask(ctx context.Context, user policy.UserID, taskID string) (TaskGrant, error) {
	task, err := o.opts.Journal.Task(ctx, taskID)
	if errors.Is(err, journal.ErrNotFound) {
		return TaskGrant{}, refusal(ErrGrant, "no task %s", taskID)
	}
	if err != nil {
		return TaskGrant{}, fmt.Errorf("operator: %w", err)
	}
	if !o.mayApprove(task, user) {
		return TaskGrant{}, refusal(ErrNotApprover, "user %d may not decide the approvals of %s", user, taskID)
	}
	if o.ownRequest(task, user) {
		return TaskGrant{}, refusal(ErrSelfApproval, "user %d asked for %s, and self-approval is off: another approver must approve it", user, taskID)
	}
	ops, err := o.opts.Journal.Operations(ctx, journal.Filter{TaskID: taskID, Transport: o.opts.Transport, States: []journal.State{journal.AwaitingApproval}})
	if err != nil {
		return TaskGrant{}, fmt.Errorf("operator: %w", err)
	}
	tg := TaskGrant{Task: taskID}
	for _, op := range ops {
		a, err := o.opts.Journal.LatestApproval(ctx, op.ID)
		if err != nil || a.Decision != journal.Pending {
			continue
		}
		if a.StepUp != policy.NoFactor || o.stepUp(task, op) != policy.NoFactor {
			continue // each asks its own code: a grant's one tap cannot give them
		}
		tg.Items = append(tg.Items, journal.GrantItem{Approval: a.ID, Operation: op.ID, PayloadSHA256: a.PayloadSHA256})
	}
	tg.Digest = grantDigest(tg.Items)
	return tg, nil
}

// grantDigest is a short digest of a list of grant items, in order: the card's
// button carries it, so that a tap approves the list the card showed or nothing.
func grantDigest(items []journal.GrantItem) string {
	var b strings.Builder
	for _, it := range items {
		fmt.Fprintf(&b, "%s %s %s\n", it.Approval, it.Operation, it.PayloadSHA256)
	}
	return action.Payload{Text: b.String()}.SHA256()[:16]
}

// GrantTask approves, in user's name and under one grant, every approval the
// card of OfferTask listed, when the list is still what its digest says: an
// approval decided, edited or added since refuses the whole grant, and nothing
// is approved. It returns the decisions; the caller commits each approved one
// with Proceed, as for a tap.
func (o *Operator) GrantTask(ctx context.Context, user policy.UserID, taskID, digest string) (journal.Grant, []Decision, error) {
	tg, err := o.OfferTask(ctx, user, taskID)
	if err != nil {
		return journal.Grant{}, nil, err
	}
	switch {
	case len(tg.Items) == 0:
		return journal.Grant{}, nil, refusal(ErrGrant, "nothing of %s waits for approval now", taskID)
	case tg.Digest != digest:
		return journal.Grant{}, nil, refusal(ErrGrant, "the approvals of %s changed since the card (one was decided, edited or added): nothing was approved; ask for the list again", taskID)
	}
	holds := make([]func(), len(tg.Items))
	for i, it := range tg.Items {
		holds[i] = o.hold(it.Operation)
	}
	g, as, err := o.opts.Journal.GrantApprovals(ctx, user, taskID, tg.Items)
	if err != nil {
		for _, release := range holds {
			release()
		}
		return g, nil, refusal(ErrGrant, "nothing was approved: %v", err)
	}
	ds := make([]Decision, len(as))
	for i, a := range as {
		o.publishDecided(ctx, a)
		ds[i] = Decision{Approval: a, release: holds[i]}
		if a.Decision != journal.DecideApprove {
			holds[i]()
			ds[i] = Decision{Approval: a, Result: votedResult(a)}
		}
	}
	o.opts.Logger.Info("grant made", "grant", g.ID, "by", user, "task", taskID, "approvals", len(as))
	return g, ds, nil
}

// WaitingReason says what an operation awaiting approval waits for, for a
// requester that reads its status (an MCP caller): the approval and its
// expiry, which approvals are still missing of a quorum, the second factor
// each approver gives beside the tap (the one in force here, StepUpOf, which a
// policy may ask more than the approval did), and the last edit an approver
// made to its payload (what will be sent is the payload as edited).
func (o *Operator) WaitingReason(ctx context.Context, op journal.Operation) string {
	j := o.opts.Journal
	a, err := j.LatestApproval(ctx, op.ID)
	if err != nil || a.Decision != journal.Pending {
		return op.ID + " is waiting for a person's approval"
	}
	parts := []string{fmt.Sprintf("%s is waiting for approval %s until %s", op.ID, a.ID, a.Expires.UTC().Format(time.RFC3339))}
	if line := QuorumLine(a); line != "" {
		parts = append(parts, line)
	}
	factor := a.StepUp
	if task, err := j.Task(ctx, op.TaskID); err == nil {
		factor = o.StepUpOf(task, op, a)
	}
	if factor != policy.NoFactor {
		parts = append(parts, StepUpLine(factor))
	}
	if es, err := j.Edits(ctx, op.ID); err == nil && len(es) > 0 {
		parts = append(parts, EditLine(es[len(es)-1])+"; it now reads: "+op.Payload.Text)
	}
	return strings.Join(parts, "; ")
}
