package operator

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/countersign/countersign/envelope"
	"github.com/countersign/countersign/journal"
	"github.com/countersign/countersign/vault"
)

// ReasonResolvedInVault is the transition reason of an operation resolved by a person
// who edited its envelope in the vault.
const ReasonResolvedInVault = "resolved_in_vault"

// envelopeOf is the unknown-outcome envelope of an operation: what is known, what is
// not, and how to verify. The vault masks and cuts the excerpt before it is written.
func (o *Operator) envelopeOf(op journal.Operation, why string, ttl time.Duration) envelope.Envelope {
	now := o.opts.Clock.Now().UTC()
	last := string(journal.Approved)
	if op.PartsDone > 0 {
		last = fmt.Sprintf("parts 1-%d of %d delivered", op.PartsDone, len(op.Payload.Messages()))
	}
	e := envelope.Envelope{
		OperationID: op.ID, Action: op.Payload.Action, Tool: op.Tool,
		Status: envelope.StatusUnknown, LastConfirmed: last, NextAction: envelope.NextVerify,
		Target: op.Payload.Target, PayloadSHA256: op.PayloadSHA256,
		Created: now, Expires: now.Add(ttl), Attempts: op.Attempts,
		Response: why, Excerpt: vault.Excerpt(op.Payload.Messages()[min(op.PartsDone, len(op.Payload.Messages())-1)]),
	}
	if fs := op.Payload.Files; len(fs) > 1 { // several things sent at once: each may be there or not
		for i, f := range fs {
			e.Items = append(e.Items, fmt.Sprintf("%d. %s %q, sha256 %s", i+1, f.Kind, f.Name, f.SHA256[:min(12, len(f.SHA256))]))
		}
	}
	return e
}

// envelope writes the unknown-outcome envelope of an operation and records its path
// in the journal. A failure (a full disk) is logged, not returned: the journal holds
// the truth, and the next start (a replica's leader: its next watch) writes the
// missing envelope. Only the process that leads writes notes.
func (o *Operator) envelope(ctx context.Context, id, why string) {
	if o.opts.Vault == nil || !o.leading() {
		return // a replica that does not lead leaves the note to the leader's watch
	}
	err := o.writeEnvelope(ctx, id, why)
	if err != nil {
		o.opts.Logger.Error("unknown-outcome envelope not written; it will be written on the next start", "op", id, "err", err)
	}
}

// writeEnvelope writes the note of operation id's last attempt, unless it is
// written already: the outcome's own write and Reconcile (or a leader's watch),
// in this process or another on the vault's folder (a replica that led a moment
// before, a `countersign vault resolve` replacing an earlier attempt's note),
// may all find it missing, and none but the first may write over it, since an
// agent may have read it, or a person begun to resolve it, since. The vault
// decides which is first (vault.Create), under the lock its writers share
// across processes; the others take the note it names.
func (o *Operator) writeEnvelope(ctx context.Context, id, why string) error {
	op, err := o.opts.Journal.Operation(ctx, id)
	if err != nil {
		return err
	}
	task, err := o.opts.Journal.Task(ctx, op.TaskID)
	if err != nil {
		return err
	}
	path, err := o.opts.Vault.Create(o.envelopeOf(op, why, task.Policy.EnvelopeTTL))
	if err != nil && !errors.Is(err, vault.ErrExists) {
		return err
	}
	if err := o.opts.Journal.SetEnvelope(ctx, id, path); err != nil {
		return err
	}
	return o.noteWhatCameMeanwhile(ctx, id)
}

// noteWhatCameMeanwhile brings a note just written up to the journal: a person
// who resolved the operation while the note was being written (another replica,
// a tap, countersign vault resolve) found no note to resolve. It resolves the note as the
// journal now says; the resolver looks at the note again after its own move
// (resolve), so whichever of the two comes second sees the other.
func (o *Operator) noteWhatCameMeanwhile(ctx context.Context, id string) error {
	op, err := o.opts.Journal.Operation(ctx, id)
	if err != nil || op.State == journal.Unknown {
		return err
	}
	now := o.opts.Clock.Now()
	if op.State == journal.Committed {
		_, err = o.opts.Vault.Delivered(id, "the journal: resolved while its note was written", now)
	} else {
		_, err = o.opts.Vault.Resolve(id, false, "the journal: resolved while its note was written", now)
	}
	if errors.Is(err, vault.ErrAlreadyResolved) {
		return nil
	}
	return err
}

// stale reports whether a note was written for an earlier attempt of op than its
// last: a retry of an operation resolved not delivered keeps the note of the first
// unknown, resolved, until the retry's own outcome replaces it, and a stop (or a
// full disk) between the two leaves it there. Its answer is about that earlier
// attempt only; taken for the last one, "not delivered" would send it again.
func stale(e envelope.Envelope, op journal.Operation) bool { return e.Attempts < op.Attempts }

// currentEnvelope replaces the note of an earlier attempt (see stale) with the
// envelope of the operation's last, unknown, attempt, so that a resolution is
// recorded over the outcome it answers. No note, or a broken one, is left to
// resolveEnvelope. It returns the error of a note that could not be written.
func (o *Operator) currentEnvelope(ctx context.Context, op journal.Operation) error {
	if o.opts.Vault == nil {
		return nil
	}
	e, _, err := o.opts.Vault.Get(op.ID)
	if err != nil || !stale(e, op) {
		return nil
	}
	if err := o.writeEnvelope(ctx, op.ID, whyUnknown(ctx, o.opts.Journal, op.ID)); err != nil {
		return fmt.Errorf("operator: %s: the note of an earlier attempt could not be replaced, so nothing changed: %w", op.ID, err)
	}
	return nil
}

// resolveEnvelope records a resolution in the operation's envelope. No envelope (it
// was never written, or was collected) is not an error: the journal holds the truth.
// A broken note is logged with its path and left for a person; the resolution goes on.
func (o *Operator) resolveEnvelope(id string, delivered bool, by string) error {
	if o.opts.Vault == nil {
		return nil
	}
	_, err := o.opts.Vault.Resolve(id, delivered, by, o.opts.Clock.Now())
	var broken *vault.BrokenError
	switch {
	case err == nil, errors.Is(err, vault.ErrNotFound):
		return nil
	case errors.As(err, &broken):
		o.opts.Logger.Warn("envelope is broken; resolved in the journal only", "op", id, "path", broken.Path, "err", broken.Err)
		return nil
	case errors.Is(err, vault.ErrAlreadyResolved):
		return refusal(ErrNotResolvable, "%s: its envelope was resolved the other way in the vault", id)
	default:
		return fmt.Errorf("operator: %s: the envelope could not be resolved, so nothing changed: %w", id, err)
	}
}

// envelopeDelivered records in the note of an operation that an earlier attempt
// left unknown that a later attempt delivered it. A note that could not be
// written (a full disk) is owed: Reconcile writes it again, since a note left
// saying not_committed invites a person to send it once more.
func (o *Operator) envelopeDelivered(id string) {
	if o.opts.Vault == nil {
		return
	}
	o.resolving.Lock()
	defer o.resolving.Unlock()
	o.noteDelivered(id)
}

// noteDelivered is envelopeDelivered under the resolving lock: it records the
// delivery in id's note, or keeps id owed when the note could not be written.
func (o *Operator) noteDelivered(id string) {
	_, err := o.opts.Vault.Delivered(id, "a later attempt", o.opts.Clock.Now())
	if err == nil || errors.Is(err, vault.ErrNotFound) {
		delete(o.notesOwed, id)
		return
	}
	if !o.notesOwed[id] {
		o.opts.Logger.Error("the operation was delivered, and its envelope could not say so yet; it is written again at the next reconcile", "op", id, "err", err)
	}
	if o.notesOwed == nil {
		o.notesOwed = map[string]bool{}
	}
	o.notesOwed[id] = true
}

// settleDeliveredNotes writes the notes owed a delivery (see noteDelivered):
// those this process could not write, and, once after it begins to lead, those
// of every delivered operation that has a note, for a note a stop left owed.
// Under the resolving lock.
func (o *Operator) settleDeliveredNotes(ctx context.Context) error {
	if !o.notesChecked {
		ops, err := o.opts.Journal.Operations(ctx, journal.Filter{Transport: o.opts.Transport, States: []journal.State{journal.Committed}, WithEnvelope: true})
		if err != nil {
			return fmt.Errorf("operator: reconcile delivered notes: %w", err)
		}
		for _, op := range ops {
			if e, _, err := o.opts.Vault.Get(op.ID); err == nil && e.Status != envelope.StatusCommitted {
				o.noteDelivered(op.ID)
			}
		}
		o.notesChecked = true
	}
	for id := range o.notesOwed {
		o.noteDelivered(id)
	}
	return nil
}

// Reconcile makes the journal and the vault agree, both ways, for the operations of
// this operator's transport: an unknown operation
// without its envelope gets one, and an envelope a person resolved by hand (in an
// editor) resolves its operation with the reason resolved_in_vault. The note of an
// earlier attempt (see stale) resolves nothing: it is replaced by the envelope of
// the attempt whose outcome is unknown now. A broken note is logged with its path
// and left alone. It returns the operations it resolved.
func (o *Operator) Reconcile(ctx context.Context) ([]string, error) {
	if o.opts.Vault == nil {
		return nil, nil
	}
	o.resolving.Lock()
	defer o.resolving.Unlock()
	if !o.leading() {
		o.notesChecked = false // checked again when it leads
		return nil, nil        // the owner of sending (the leader of replicas) reconciles; a reader does not
	}
	if err := o.settleDeliveredNotes(ctx); err != nil {
		return nil, err
	}
	ops, err := o.opts.Journal.Operations(ctx, journal.Filter{Transport: o.opts.Transport, States: []journal.State{journal.Unknown}})
	if err != nil {
		return nil, fmt.Errorf("operator: reconcile: %w", err)
	}
	var resolved []string
	for _, op := range ops {
		e, path, err := o.opts.Vault.Get(op.ID)
		var broken *vault.BrokenError
		switch {
		case errors.Is(err, vault.ErrNotFound):
			o.envelope(ctx, op.ID, whyUnknown(ctx, o.opts.Journal, op.ID))
		case errors.As(err, &broken):
			o.opts.Logger.Warn("envelope is broken; fix it by hand or resolve with /resolve", "op", op.ID, "path", broken.Path, "err", broken.Err)
		case err != nil:
			return resolved, fmt.Errorf("operator: reconcile %s: %w", op.ID, err)
		case stale(e, op):
			// The note of an attempt before a retry: whatever it says is about that
			// attempt. The unknown one now gets a note of its own.
			o.envelope(ctx, op.ID, whyUnknown(ctx, o.opts.Journal, op.ID))
		case !e.Unresolved():
			if op.Envelope != path {
				o.opts.Journal.SetEnvelope(ctx, op.ID, path)
			}
			by := e.ResolvedBy
			if by == "" {
				by = "an editor"
			}
			if _, err := o.resolve(ctx, op.ID, e.Status == envelope.StatusCommitted, by, ReasonResolvedInVault); err != nil {
				return resolved, err
			}
			resolved = append(resolved, op.ID)
		}
	}
	return resolved, nil
}
