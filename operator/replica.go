package operator

import (
	"context"
	"errors"
	"sync"
	"time"

	"github.com/countersign/countersign/journal"
)

// An operator whose journal joined as a replica (journal.Join) is one of several
// processes that send its transport's operations. Every replica commits what it
// is asked to and what its taps approve, expires approvals, and takes over the
// work of a replica that died: it renews its own leases every WatchEvery, runs
// approved operations and scheduled retries that nobody holds (free, or held by
// a replica whose lease is past), and moves to unknown the commits a dead
// replica left on the wire once the lease is past, telling whoever asked. The
// journal's compare-and-set makes each commit happen once, whichever replica
// gets there first. One replica at a time leads (Leading): it shows the cards
// nobody showed, asks the approvers to verify what other processes asked, writes
// and reconciles the vault's notes and prunes the inbox; a surface that polls,
// polls only while it leads.

// replica reports whether this operator is one of several replicas.
func (o *Operator) replica() bool { return o.opts.Journal.Replica() != "" }

// leadership is whether this operator leads its transport's replicas, and a
// channel closed at the next change.
type leadership struct {
	mu      sync.Mutex
	leading bool
	changed chan struct{}
}

// Leading reports whether this process leads its transport's replicas, and
// returns a channel closed when that changes. An operator that is no replica
// leads for good (it owns its transport, journal.Own), and its channel is nil.
func (o *Operator) Leading() (bool, <-chan struct{}) {
	if !o.replica() {
		return o.opts.Transport != "" && !o.opts.Remote, nil
	}
	l := &o.lead
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.changed == nil {
		l.changed = make(chan struct{})
	}
	return l.leading, l.changed
}

func (o *Operator) leading() bool {
	ok, _ := o.Leading()
	return ok
}

func (o *Operator) setLeading(v bool) {
	l := &o.lead
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.leading == v && l.changed != nil {
		return
	}
	l.leading = v
	if l.changed != nil {
		close(l.changed)
	}
	l.changed = make(chan struct{})
}

// keepLeases renews this replica's leases and takes or checks the leadership,
// every WatchEvery, until ctx ends; then it gives the leadership up, and the
// claims on work it no longer does (journal.Release). It runs
// beside the sweep, so that a slow sweep (a large vault to reconcile) never lets
// a lease run out.
func (o *Operator) keepLeases(ctx context.Context) {
	tick := time.NewTicker(o.opts.WatchEvery)
	defer tick.Stop()
	j, t := o.opts.Journal, o.opts.Transport
	defer func() {
		o.setLeading(false)
		if err := j.Resign(t); err != nil {
			o.opts.Logger.Warn("leadership not given up cleanly", "err", err)
		}
		// Stopping: what this replica holds and does not run any more is the
		// others' at once, not after the lease.
		ctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 5*time.Second)
		defer cancel()
		if err := errors.Join(j.Release(ctx), o.shared.Release(ctx)); err != nil {
			o.opts.Logger.Warn("claims not given up; the other replicas take them after the lease", "err", err)
		}
	}()
	for {
		// The journal's claims, then what is held beside them (chats' turns,
		// send slots): a tick that renews the first renews the second, as one
		// transaction did.
		if err := j.RenewLeases(ctx); err != nil {
			o.warn(ctx, "leases not renewed", err)
		} else if err := o.shared.RenewLeases(ctx); err != nil {
			o.warn(ctx, "leases of chats' turns and send slots not renewed", err)
		}
		leads := j.Leading(ctx, t)
		if !leads {
			var err error
			if leads, err = j.Lead(ctx, t); err != nil {
				o.warn(ctx, "leadership not asked for", err)
			}
		}
		if was := o.leading(); was != leads && ctx.Err() == nil {
			o.opts.Logger.Info("leadership changed", "transport", t, "leading", leads)
			o.setLeading(leads)
		}
		select {
		case <-ctx.Done():
			return
		case <-tick.C:
		}
	}
}

// recoverExpired moves to unknown the commits of this transport that a dead
// replica left on the wire, once its lease is past, and tells whoever asked.
func (o *Operator) recoverExpired(ctx context.Context) {
	ids, err := o.opts.Journal.RecoverExpired(ctx, o.opts.Transport)
	if err != nil {
		o.warn(ctx, "commits of a stopped replica not recovered", err)
	}
	for _, id := range ids {
		o.opts.Logger.Warn("a replica stopped while it was sending; the outcome is unknown: a state-setting call is settled here, any other left to a person and not resent", "op", id)
		if o.opts.Observe != nil {
			o.opts.Observe(Attempt{Operation: id, Outcome: journal.Unknown, Interrupted: true})
		}
		o.settleOrTell(ctx, &o.wg, o.current(ctx, id), "the replica sending it stopped")
	}
}

// writeMissingEnvelopes writes the note of every unknown operation of this
// transport that has none recorded: a replica that is not the leader leaves its
// unknown outcomes' notes to the leader, which writes them here within a second.
func (o *Operator) writeMissingEnvelopes(ctx context.Context) {
	if o.opts.Vault == nil {
		return
	}
	ops, err := o.opts.Journal.Operations(ctx, journal.Filter{Transport: o.opts.Transport,
		States: []journal.State{journal.Unknown}, NoEnvelope: true})
	if err != nil {
		o.warn(ctx, "unknown outcomes without a note not read", err)
		return
	}
	for _, op := range ops {
		o.envelope(ctx, op.ID, whyUnknown(ctx, o.opts.Journal, op.ID))
	}
}
