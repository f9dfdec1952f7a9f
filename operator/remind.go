package operator

import (
	"context"
	"slices"
	"time"

	"github.com/countersign/countersign/journal"
)

// RemindAfter is how long an operation stays unknown before a digest names it:
// the notice sent when its outcome became unknown was its first reminder.
const RemindAfter = time.Hour

// RemindAtMost is how many operations one digest names, the oldest first: each
// is a message with buttons to every approver, and a long digest would hold up
// the approval cards queued behind it in those chats. The rest are in `countersign vault
// list -unresolved`, and in the next digests as the oldest are resolved.
const RemindAtMost = 20

// collectEvery is how often the leader's sweep removes the resolved, expired
// notes of the vault: notes expire in days, so an hour late is on time.
const collectEvery = time.Hour

// remindWork names the digest of a transport in the journal's record of
// periodic work (journal.TakeTurn).
func remindWork(transport string) string { return "reminders:" + transport }

// remind publishes, when a digest is due (policy.Reminders), a Reminder event
// for each operation of this transport whose outcome has been unknown for
// RemindAfter or more, oldest first, at most RemindAtMost: a surface puts each
// to the approvers of its task with its resolve buttons. The turn is taken in
// the journal first, so a digest goes out once per interval, however many
// restarts or replicas; only the leader sweeps, and only one that a surface
// listens to takes it.
func (o *Operator) remind(ctx context.Context) {
	rm := o.opts.Policy.Remind()
	if rm.Every <= 0 || len(o.listeners()) == 0 {
		return
	}
	now := o.opts.Clock.Now()
	ops, err := o.opts.Journal.Operations(ctx, journal.Filter{Transport: o.opts.Transport, States: []journal.State{journal.Unknown}})
	if err != nil {
		o.warn(ctx, "unknown outcomes to remind of not read", err)
		return
	}
	ops = slices.DeleteFunc(ops, func(op journal.Operation) bool { return now.Sub(op.Updated) < RemindAfter })
	if len(ops) == 0 {
		return // nothing to remind of: the turn stays for when there is
	}
	took, err := o.shared.TakePeriodicTurn(ctx, remindWork(o.opts.Transport), rm.Since(now), now)
	if err != nil || !took {
		if err != nil {
			o.warn(ctx, "digest of unknown outcomes not sent", err)
		}
		return
	}
	slices.SortFunc(ops, func(a, b journal.Operation) int { return a.Created.Compare(b.Created) })
	if len(ops) > RemindAtMost {
		o.opts.Logger.Warn("digest names the oldest unknown outcomes only; see countersign vault list -unresolved",
			"named", RemindAtMost, "unknown", len(ops))
		ops = ops[:RemindAtMost]
	}
	for _, op := range ops {
		o.publish(Event{Kind: Reminder, Operation: op, Result: resultOf(op), Late: true})
	}
	o.opts.Logger.Info("digest of unknown outcomes sent", "operations", len(ops))
}

// collect removes, at most once per collectEvery, the resolved notes of the
// vault whose envelope_ttl has passed, as `countersign vault gc` does, when the policy
// lets it (reminders.collect_notes). An unresolved note is never removed.
func (o *Operator) collect() {
	if o.opts.Vault == nil || !o.opts.Policy.Remind().CollectNotes {
		return
	}
	now := o.opts.Clock.Now()
	if last := o.collected.Load(); last != nil && now.Sub(*last) < collectEvery {
		return
	}
	o.collected.Store(&now)
	removed, err := o.opts.Vault.GC(now)
	if len(removed) > 0 {
		o.opts.Logger.Info("resolved notes past their envelope_ttl collected", "removed", len(removed))
	}
	if err != nil {
		o.opts.Logger.Warn("notes not collected", "err", err)
	}
}

// remindBefore is how long before its expiry an approval nobody decided is
// reminded of: a quarter of its time to live, at most an hour, so that a
// reminder leaves time to decide and does not come with the card.
func remindBefore(ttl time.Duration) time.Duration { return min(time.Hour, ttl/4) }

// approvalWork names an approval's reminder in the journal's record of
// periodic work: taken once, so an approval is reminded of once, however many
// restarts or replicas.
func approvalWork(id string) string { return "approval-reminder:" + id }

// remindApprovals publishes an ApprovalReminder for each approval of this
// transport nobody decided that is within remindBefore of its expiry, once: a
// surface puts it to the approvers beside the card, with its buttons. Only the
// leader sweeps, and only one that a surface listens to takes the turn.
func (o *Operator) remindApprovals(ctx context.Context) {
	if len(o.listeners()) == 0 {
		return
	}
	now := o.opts.Clock.Now()
	as, err := o.opts.Journal.Expiring(ctx, o.opts.Transport, now.Add(time.Hour))
	if err != nil {
		o.warn(ctx, "approvals near their expiry not read", err)
		return
	}
	for _, a := range as {
		if !nearExpiry(a, now) {
			continue
		}
		took, err := o.shared.TakePeriodicTurn(ctx, approvalWork(a.ID), a.Created, now)
		if err != nil || !took {
			if err != nil {
				o.warn(ctx, "approval not reminded of", err)
			}
			continue
		}
		op, err := o.opts.Journal.Operation(ctx, a.OperationID)
		if err != nil {
			o.warn(ctx, "approval not reminded of", err)
			continue
		}
		o.publish(Event{Kind: ApprovalReminder, Operation: op, Approval: &a, Late: true})
	}
}
