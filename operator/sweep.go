package operator

import (
	"context"
	"fmt"
	"sync"
	"time"

	"github.com/countersign/countersign/action"
	"github.com/countersign/countersign/journal"
)

// inboxKeep is how long handled updates stay in the inbox: long enough for any
// redelivery, which the inbox's keys make a no-op.
const inboxKeep = 7 * 24 * time.Hour

// slotsKeep is how long the replicas' send slots of a chat stay after its last
// send (coord.PruneSlots): far past any span, so that a pruned pool, made
// again, admits exactly what the old one would have.
const slotsKeep = time.Hour

// strangersKeep is how long a replica's mark of a stranger it told stays in the
// journal (coord.PruneStrangers). The transport keeps its strangers silent
// for a while of its own (telegram: an hour), which the operator does not
// know; a day is far past any such while, so that a pruned mark is one that
// would not have kept anybody silent.
const strangersKeep = 24 * time.Hour

// showAgain is how long an approval published here may go without a card before
// the watch publishes it again: its cards wait for a reply that has not ended
// (a model's turn ends well within this), or they reached no approver then.
const showAgain = 5 * time.Minute

// Sweep runs, until ctx ends, the owner's periodic work for its transport. Every
// Options.SweepEvery it expires approvals whose time has passed (Decided and
// Outcome events, late), takes in envelopes resolved by hand in the vault,
// prunes the inbox, reminds the approvers of unknown outcomes (Reminder events,
// once per the policy's reminders interval) and collects the resolved notes
// whose envelope_ttl has passed. Every Options.WatchEvery it looks for what other processes
// (or a stopped one) left to the owner: pending approvals of its transport that no
// event here has published (ApprovalNeeded, Late), approved operations and
// scheduled retries that nothing here runs (a remote operator auto-approved them,
// or a request stopped waiting), which it runs, and requests to verify
// (VerificationAsked). Each look is a few indexed queries of the rows that wait,
// whatever the size of the journal. Only the process that owns the transport
// (journal.Own) runs it, or every replica (journal.Join), each doing what
// replica.go says; a Remote operator, or one without a transport, returns at
// once. Sweep returns once the commits it started have their outcome.
func (o *Operator) Sweep(ctx context.Context) {
	if o.opts.Transport == "" || o.opts.Remote {
		return
	}
	ctx = asLate(ctx)
	var runs sync.WaitGroup // the commits the watch started; Sweep waits for them
	if o.replica() {
		runs.Add(1)
		go func() { defer runs.Done(); o.keepLeases(ctx) }()
	}
	slow, fast := time.NewTicker(o.opts.SweepEvery), time.NewTicker(o.opts.WatchEvery)
	defer slow.Stop()
	defer fast.Stop()
	_, changed := o.Leading() // taken first: a lead taken during the first sweep is seen below
	o.showInterrupted(ctx)
	o.sweep(ctx)
	o.watch(ctx, &runs)
	for {
		select {
		case <-ctx.Done():
			runs.Wait()
			return
		case <-slow.C:
			o.sweep(ctx)
		case <-fast.C:
			o.watch(ctx, &runs)
		case <-changed:
			// A replica that just took the lead does the leader's slow work now
			// (the cards of old approvals, the vault), not a sweep period later.
			var leads bool
			leads, changed = o.Leading()
			if leads {
				o.sweep(ctx)
			}
		}
	}
}

// sweep is the slow half of Sweep: expiry, and for the leader reconcile, inbox
// prune, the digest of unknown outcomes and the collection of old notes
// (remind.go).
func (o *Operator) sweep(ctx context.Context) {
	o.expire(ctx)
	if !o.leading() {
		return
	}
	// Every approval still waiting without a card, however old: a stopped
	// process's, or one whose card reached nobody before.
	o.showLate(ctx, time.Time{})
	if _, err := o.opts.Journal.PruneInbox(ctx, o.opts.Clock.Now().Add(-inboxKeep)); err != nil && ctx.Err() == nil {
		o.opts.Logger.Warn("inbox prune failed", "err", err)
	}
	if o.replica() {
		if _, err := o.shared.PruneSlots(ctx, slotsKeep); err != nil && ctx.Err() == nil {
			o.opts.Logger.Warn("send slots prune failed", "err", err)
		}
		if _, err := o.shared.PruneStrangers(ctx, strangersKeep); err != nil && ctx.Err() == nil {
			o.opts.Logger.Warn("strangers prune failed", "err", err)
		}
	}
	// A person may resolve an envelope in an editor while the process runs.
	if _, err := o.Reconcile(ctx); err != nil && ctx.Err() == nil {
		o.opts.Logger.Warn("vault reconcile failed", "err", err)
	}
	o.remind(ctx)
	o.remindApprovals(ctx)
	o.escalate(ctx)
	o.collect()
}

// expire records the expiry of every approval of this transport whose time has
// passed, and publishes each decision and outcome. Another transport's are its
// owner's: the surfaces that show them listen to that owner.
func (o *Operator) expire(ctx context.Context) {
	expired, err := o.opts.Journal.ExpireDueOf(ctx, o.opts.Transport)
	if err != nil && ctx.Err() == nil {
		o.opts.Logger.Warn("expiry sweep failed", "err", err)
	}
	for _, a := range expired {
		o.publishDecided(ctx, a)
		if _, err := o.finish(ctx, a.OperationID, expiredResult(a)); err != nil {
			o.opts.Logger.Warn("result of an expiry not recorded", "op", a.OperationID, "err", err)
		}
	}
}

// watchWindow is how far back the fast watch looks for new approvals: wider than
// any clock difference between processes on one machine, or a transaction's
// time between its stamp and its commit. Older ones are the slow sweep's.
const watchWindow = time.Minute

// watch is the fast half of Sweep.
func (o *Operator) watch(ctx context.Context, runs *sync.WaitGroup) {
	if o.replica() {
		o.recoverExpired(ctx)
	}
	o.runLeft(ctx, runs)
	if !o.leading() {
		return
	}
	o.showLate(ctx, o.opts.Clock.Now().Add(-watchWindow))
	o.showVerifications(ctx)
	if o.replica() {
		o.writeMissingEnvelopes(ctx)
	}
}

// showLate publishes ApprovalNeeded for the pending approvals of this transport
// created since since (all of them, when it is zero) without a card that no
// surface is showing (showing), each once among the replicas: the journal's
// mark of it (journal.ShowApproval) goes to one watch.
func (o *Operator) showLate(ctx context.Context, since time.Time) {
	now := o.opts.Clock.Now()
	var as []journal.Approval
	var err error
	if since.IsZero() {
		as, err = o.opts.Journal.Uncarded(ctx, o.opts.Transport, now.Add(time.Hour))
	} else {
		as, err = o.opts.Journal.UncardedSince(ctx, o.opts.Transport, since)
	}
	if err != nil {
		o.warn(ctx, "approvals without cards not read", err)
		return
	}
	for _, a := range as {
		if !o.showing(a, now) {
			o.show(ctx, a)
		}
	}
}

// show publishes ApprovalNeeded for approval a, read a moment ago, if it still
// waits and its mark in the journal is this call's.
func (o *Operator) show(ctx context.Context, a journal.Approval) {
	op, err := o.opts.Journal.Operation(ctx, a.OperationID)
	if err != nil {
		o.warn(ctx, "approval not shown", err)
		return
	}
	// The list was read before: a decision in between (an edit, a tap) forgot
	// the approval's card there, and the approval is no longer waiting. Only one
	// still waiting, as read now, is shown.
	if cur, err := o.opts.Journal.LatestApproval(ctx, op.ID); err != nil || cur.ID != a.ID || cur.Decision != "" {
		return
	}
	if len(o.listeners()) == 0 {
		return // nothing here shows it: not marked shown
	}
	if ok, err := o.opts.Journal.ShowApproval(ctx, a, o.self); !ok {
		if err != nil {
			o.warn(ctx, "approval not shown", err)
		}
		return // another watch marked it first, or it changed
	}
	o.publishAsked(ctx, op, a)
}

// showInterrupted publishes again, as an owner's run starts, the approvals its
// stopped run published in its last moments (within showAgain of its last
// publication, however long ago it stopped): their cards may have reached some
// approvers only, and a surface shows only the cards it has not shown. Among replicas the leader's watch looks for approvals without cards
// only: another replica's run may be alive and showing them.
func (o *Operator) showInterrupted(ctx context.Context) {
	if o.replica() || len(o.listeners()) == 0 {
		return
	}
	as, err := o.opts.Journal.ShownLast(ctx, o.opts.Transport, showAgain)
	if err != nil {
		o.warn(ctx, "approvals shown before the start not read", err)
		return
	}
	for _, a := range as {
		if a.ShownBy != o.self {
			o.show(ctx, a)
		}
	}
}

// Showing tells the journal, every third of a lease from now until stop, that
// a surface of this process still shows approval id: its cards may be held up
// (behind a chat's pace, a slow send), and among replicas another one's watch
// shows an approval a live replica marked more than a lease ago (showing),
// which would put a second card before each approver. A surface calls it as it
// takes the approval to show, and stops once its cards are out. It renews the
// mark only while this run holds it; a process alone, whose watch waits
// showAgain for its own approvals and whose surfaces show one approval's cards
// at a time, has nothing to renew.
func (o *Operator) Showing(ctx context.Context, id string) (stop func()) {
	every := o.showingEvery()
	if every <= 0 {
		return func() {}
	}
	ctx, cancel := context.WithCancel(ctx)
	done := make(chan struct{})
	go func() {
		defer close(done)
		tick := time.NewTicker(every)
		defer tick.Stop()
		for {
			select {
			case <-ctx.Done():
				return
			case <-tick.C:
			}
			if err := o.opts.Journal.KeepShown(ctx, id, o.self); err != nil && ctx.Err() == nil {
				o.opts.Logger.Warn("approval still shown here, but its mark not renewed: another replica may show its cards too", "approval", id, "err", err)
			}
		}
	}()
	return func() { cancel(); <-done }
}

// showingEvery is how often Showing renews a mark: a third of the lease among
// replicas, never for a process alone.
func (o *Operator) showingEvery() time.Duration {
	if !o.replica() {
		return 0
	}
	return o.opts.Journal.Lease() / 3
}

// showing reports whether a surface is showing approval a, which has no card
// yet: this run published it less than showAgain ago, or another replica did
// less than a lease ago (its request's surface shows the cards, and the leader
// does only when that one did not). What a stopped run published, a run of an
// owner shows again at once.
func (o *Operator) showing(a journal.Approval, now time.Time) bool {
	switch {
	case a.Shown.IsZero():
		return false
	case a.ShownBy == o.self:
		return now.Sub(a.Shown) < showAgain
	case o.replica():
		return now.Sub(a.Shown) < o.opts.Journal.Lease()
	}
	return false
}

// runLeft runs the approved operations and scheduled retries of this transport
// that no goroutine here runs and, among replicas, that no live replica holds.
// Two processes cannot both commit one: the move to committing is the journal's
// compare-and-set.
func (o *Operator) runLeft(ctx context.Context, runs *sync.WaitGroup) {
	ops, err := o.opts.Journal.Operations(ctx, journal.Filter{Transport: o.opts.Transport,
		States: []journal.State{journal.Approved, journal.RetryWait}})
	if err != nil {
		o.warn(ctx, "work left to the owner not read", err)
		return
	}
	now, err := o.opts.Journal.LeaseNow(ctx)
	if err != nil {
		o.warn(ctx, "work left to the owner not read", err)
		return
	}
	for _, op := range ops {
		if !o.held(op.ID) && o.opts.Journal.RunsHere(op, now) {
			o.start(ctx, runs, op.ID, "operation left to the owner failed")
		}
	}
}

// showVerifications publishes the requests to verify that other processes recorded.
func (o *Operator) showVerifications(ctx context.Context) {
	vs, err := o.opts.Journal.VerificationsToShow(ctx, o.opts.Transport)
	if err != nil {
		o.warn(ctx, "verification requests not read", err)
		return
	}
	for _, v := range vs {
		// Marked first: a question shown twice is noise, one never shown is asked again.
		if err := o.opts.Journal.VerificationShown(ctx, v.Seq); err != nil {
			o.warn(ctx, "verification request not marked shown", err)
			continue
		}
		o.publishVerification(ctx, v.OperationID)
	}
}

func (o *Operator) warn(ctx context.Context, what string, err error) {
	if ctx.Err() == nil {
		o.opts.Logger.Warn(what, "err", err)
	}
}

func (o *Operator) publishVerification(ctx context.Context, opID string) {
	op := o.current(ctx, opID)
	if op.State != journal.Unknown {
		return // resolved in the meantime: nothing to ask
	}
	o.publish(Event{Kind: VerificationAsked, Operation: op, Result: resultOf(op), Late: isLate(ctx)})
}

// VerificationEvery is how often the approvers are asked to verify one
// operation: a request within it of the last one answers with that one and asks
// nobody. Each request is a new message with buttons to every approver, and the
// buttons stay until a person answers, so a repeat sooner only adds noise; ten
// minutes is long enough that an agent polling in a loop asks once, short enough
// that a question missed on a phone is put again while the agent still waits.
const VerificationEvery = 10 * time.Minute

// RequestVerification records that someone (by: "mcp:<client>", a user) asks the
// approvers of operation opID to verify its unknown outcome, once per
// VerificationEvery: it returns the request, the earlier one (Repeat set) when
// the approvers were already asked within the interval, by anyone through any
// process. The owner of the operation's transport publishes VerificationAsked for
// a new request (at once, when this operator is that owner; otherwise its Sweep
// does), and a surface puts the question to the approvers. It resolves nothing:
// resolving stays a person's act. Anything but an unknown operation is refused
// with ErrNotResolvable.
func (o *Operator) RequestVerification(ctx context.Context, opID, by string) (journal.Verification, error) {
	op, err := o.opts.Journal.Operation(ctx, opID)
	if err != nil {
		return journal.Verification{}, fmt.Errorf("operator: %w", err)
	}
	if op.State != journal.Unknown {
		return journal.Verification{}, refusal(ErrNotResolvable, "%s is %s, not unknown: there is nothing to verify", opID, op.State)
	}
	owner := !o.opts.Remote && o.opts.Transport != "" && op.Transport == o.opts.Transport
	v, err := o.opts.Journal.AskVerification(ctx, opID, by, owner, VerificationEvery)
	if err != nil {
		return v, fmt.Errorf("operator: %w", err)
	}
	if owner && !v.Repeat {
		o.publishVerification(ctx, opID)
	}
	return v, nil
}

// hold counts a goroutine here that runs operation id (or is about to); the
// returned function ends it. The watch runs only operations nobody holds.
func (o *Operator) hold(id string) (release func()) {
	o.runMu.Lock()
	o.running[id]++
	o.runMu.Unlock()
	return func() {
		o.runMu.Lock()
		defer o.runMu.Unlock()
		if o.running[id]--; o.running[id] <= 0 {
			delete(o.running, id)
		}
	}
}

func (o *Operator) held(id string) bool {
	o.runMu.Lock()
	defer o.runMu.Unlock()
	return o.running[id] > 0
}

// handedOver is what a Remote operator answers for an approved operation: it is
// left, approved, to the owner of its transport, whose Sweep commits it.
func (o *Operator) handedOver(ctx context.Context, id string) (action.Result, error) {
	op, err := o.opts.Journal.Operation(ctx, id)
	if err != nil {
		return action.Result{}, fmt.Errorf("operator: %w", err)
	}
	if op.State != journal.Approved && op.State != journal.RetryWait {
		return resultOf(op), nil
	}
	return action.Result{Status: action.StatusPending, OperationID: id, SideEffect: action.SideEffectPrepared, NextAction: action.NextNone,
		Reason: fmt.Sprintf("approved; the process that owns %s delivers it", orNobody(op.Transport))}, nil
}
