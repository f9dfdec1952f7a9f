package journal

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strconv"

	"github.com/countersign/countersign/action"
	"github.com/countersign/countersign/audit"
	"github.com/countersign/countersign/policy"
)

// AuditReport is what VerifyAudit found.
type AuditReport struct {
	Records int64
	Head    string // the hash of the last record
	// Pending counts the records not yet chained (PostgreSQL: of facts
	// committed while the check ran), checked against their facts but not
	// yet protected by the chain.
	Pending int64
	Fault   *audit.RecordFault // the first bad record; nil when the trail is intact
}

// VerifyAudit recomputes the audit trail from its first record and checks the
// journal's own tables against it: every transition row since the trail began
// matches its record and none lacks one, and so does every approval and every
// decision; the history before it matches the genesis record's digest; each
// operation's state and payload are what its last records say. The report
// names the first bad record (Fault); the error is for a journal that could not
// be read. It reads the whole trail and the journal's facts, in memory
// proportional to them.
//
// On PostgreSQL it first chains what is pending (FlushAudit), then reads the
// trail, the records still pending and the facts in one snapshot: writers go
// on committing facts whose records are pending, and such a fact is
// accounted for by its pending record, checked like a chained one (see
// auditpending.go). Facts and records read at different moments would show a
// live journal's newest facts without their records.
func (j *Journal) VerifyAudit(ctx context.Context) (AuditReport, error) {
	if err := j.FlushAudit(ctx); err != nil {
		return AuditReport{}, fmt.Errorf("journal: verify the audit trail: %w", err)
	}
	return j.verifySnapshot(ctx)
}

// verifySnapshot checks the trail and the records still pending against the
// facts, all read in one snapshot.
func (j *Journal) verifySnapshot(ctx context.Context) (AuditReport, error) {
	var rep AuditReport
	err := j.snapshot(ctx, func(q queryer) error {
		var err error
		rep, err = j.verifyAudit(ctx, q)
		return err
	})
	return rep, err
}

func (j *Journal) verifyAudit(ctx context.Context, q queryer) (AuditReport, error) {
	var rep AuditReport
	c := audit.NewChain(true)
	var recs []audit.Record
	err := auditRecords(ctx, q, 0, func(r audit.Record) error {
		if f := c.Add(r); f != nil {
			rep.Fault = f
			return errStop
		}
		recs = append(recs, r)
		return nil
	})
	rep.Records, rep.Head = c.Records(), c.Head()
	if rep.Fault != nil {
		return rep, nil
	}
	if err != nil {
		return rep, err
	}
	var pending []pendingRecord
	if j.pg != nil {
		if pending, err = readPending(ctx, q); err != nil {
			return rep, err
		}
	}
	rep.Pending = int64(len(pending))
	f, err := j.crossCheck(ctx, q, recs, pending)
	rep.Fault = f
	return rep, err
}

var errStop = errors.New("stop")

// facts is what the journal's tables say, read for the cross-check.
type facts struct {
	transitions map[int64]transitionRow
	approvals   map[string]Approval
	ops         map[string]opRow
	// Of the approvals beyond one tap (quorum.go, edits.go, grants.go), all
	// made since the trail began: each must have its record.
	votes  map[voteKey]Vote
	edits  map[editKey]Edit
	grants map[string]Grant
	// receipts are the votes' passkey receipts, as stored (JSON), of the
	// votes given with one.
	receipts map[voteKey]string
}

type voteKey struct {
	approval string
	by       policy.UserID
}

type editKey struct {
	op  string
	seq int
}

type transitionRow struct {
	op string
	f  audit.TransitionFact
}

type opRow struct {
	state   State
	payload string
	sha256  string
}

// crossCheck compares the intact trail recs, and after them the records
// still pending, with the journal's tables, read through q.
func (j *Journal) crossCheck(ctx context.Context, q queryer, recs []audit.Record, pending []pendingRecord) (*audit.RecordFault, error) {
	if len(recs) == 0 {
		return &audit.RecordFault{Kind: audit.Genesis, Problem: "the trail is empty: its genesis record is gone"}, nil
	}
	fs, err := j.readFacts(ctx, q)
	if err != nil {
		return nil, err
	}
	var g audit.GenesisFact
	faults := []audit.RecordFault{}
	all := slices.Clip(recs)
	for _, p := range pending {
		all = append(all, p.Record)
	}
	badAt := func(i int, format string, args ...any) {
		r := all[i]
		f := audit.RecordFault{Seq: r.Seq, Kind: r.Kind, Operation: r.Operation, Problem: fmt.Sprintf(format, args...)}
		if i >= len(recs) {
			f.Pending = pending[i-len(recs)].id
		}
		faults = append(faults, f)
	}
	seenT := map[int64]bool{}
	asked, decided := map[string]bool{}, map[string]bool{}
	more := newBeyondTap()
	lastState, lastSHA := map[string]State{}, map[string]string{}
	for i, r := range all {
		bad := func(format string, args ...any) { badAt(i, format, args...) }
		switch {
		case i == 0 && r.Kind != audit.Genesis:
			bad("the trail does not start with its genesis record")
		case i == 0:
			if err := json.Unmarshal(r.Body, &g); err != nil {
				bad("genesis body: %v", err)
			}
		case r.Kind == audit.Transition:
			var f audit.TransitionFact
			if err := json.Unmarshal(r.Body, &f); err != nil || strconv.FormatInt(f.Transition, 10) != r.Ref {
				bad("body does not describe transition %s", r.Ref)
				continue
			}
			row, ok := j.transitionOf(fs, f.Transition)
			switch {
			case seenT[f.Transition]:
				bad("transition %d has a record already: a fact has one record, and this one was added", f.Transition)
			case !ok:
				bad("transition %d (%s -> %s) is missing from the journal", f.Transition, f.From, f.To)
			case row.op != r.Operation || row.f.From != f.From || row.f.To != f.To || row.f.Reason != f.Reason || row.f.At != f.At:
				bad("transition %d in the journal is %s %s -> %s %q at %d; the record says %s %s -> %s %q at %d",
					f.Transition, row.op, row.f.From, row.f.To, row.f.Reason, row.f.At, r.Operation, f.From, f.To, f.Reason, f.At)
			}
			seenT[f.Transition] = true
			lastState[r.Operation] = State(f.To)
			if f.PayloadSHA256 != "" {
				lastSHA[r.Operation] = f.PayloadSHA256
			}
		case r.Kind == audit.Approval || r.Kind == audit.Decision:
			var f audit.ApprovalFact
			if err := json.Unmarshal(r.Body, &f); err != nil || f.Approval != r.Ref {
				bad("body does not describe approval %s", r.Ref)
				continue
			}
			a, ok := fs.approvals[f.Approval]
			switch {
			case !ok:
				bad("approval %s is missing from the journal", f.Approval)
			case r.Kind == audit.Approval && asked[a.ID], r.Kind == audit.Decision && decided[a.ID]:
				bad("approval %s has a %s record already: a fact has one record, and this one was added", a.ID, r.Kind)
			case r.Kind == audit.Approval:
				asked[a.ID] = true
				if got := approvalAsked(a); a.OperationID != r.Operation || got != f {
					bad("approval %s in the journal is %s; the record says %s", a.ID, mustJSON(got), r.Body)
				}
			default:
				decided[a.ID] = true
				if a.OperationID != r.Operation || string(a.Decision) != f.Decision || int64(a.DecidedBy) != f.By || ms(a.DecidedAt) != f.At || a.Grant != f.Grant {
					bad("approval %s in the journal is %s by %d at %d; the record says %s by %d at %d",
						a.ID, a.Decision, a.DecidedBy, ms(a.DecidedAt), f.Decision, f.By, f.At)
				}
			}
		case r.Kind == audit.Vote || r.Kind == audit.Receipt || r.Kind == audit.Escalation || r.Kind == audit.Edit || r.Kind == audit.Grant || r.Kind == audit.Revoke:
			if problem := more.check(fs, r); problem != "" {
				bad("%s", problem)
			}
		default:
			bad("unknown kind %q", r.Kind)
		}
	}
	if len(faults) > 0 {
		return &faults[0], nil
	}
	if f := more.unrecorded(fs); f != nil {
		return f, nil
	}
	return j.checkUnrecorded(ctx, q, fs, recs, g, seenT, asked, decided, lastState, lastSHA)
}

// transitionOf is the row of transitions seq.
func (j *Journal) transitionOf(fs facts, seq int64) (transitionRow, bool) {
	row, ok := fs.transitions[seq]
	return row, ok
}

// checkUnrecorded looks for facts of the journal that have no record since the
// trail began, checks the history before it against the genesis digest, and
// each operation's state and payload against its last records.
func (j *Journal) checkUnrecorded(ctx context.Context, q queryer, fs facts, recs []audit.Record, g audit.GenesisFact,
	seenT map[int64]bool, asked, decided map[string]bool, lastState map[string]State, lastSHA map[string]string) (*audit.RecordFault, error) {
	missing := func(kind, op, format string, args ...any) (*audit.RecordFault, error) {
		return &audit.RecordFault{Kind: kind, Operation: op, Problem: fmt.Sprintf(format, args...)}, nil
	}
	if len(recs) == 0 {
		return missing(audit.Genesis, "", "the trail is empty: its genesis record is gone")
	}
	seqs := make([]int64, 0, len(fs.transitions))
	for seq := range fs.transitions {
		seqs = append(seqs, seq)
	}
	slices.Sort(seqs)
	for _, seq := range seqs {
		if row := fs.transitions[seq]; seq > g.Transitions && !seenT[seq] {
			return missing(audit.Transition, row.op, "transition %d (%s -> %s, %q) has no audit record", seq, row.f.From, row.f.To, row.f.Reason)
		}
	}
	ids := make([]string, 0, len(fs.approvals))
	for id := range fs.approvals {
		ids = append(ids, id)
	}
	slices.Sort(ids)
	pending := map[string]bool{}
	for _, id := range g.Pending {
		pending[id] = true
	}
	for _, id := range ids {
		a := fs.approvals[id]
		if a.Decision != Pending && !decided[id] && (asked[id] || pending[id]) {
			return missing(audit.Decision, a.OperationID, "decision %s by %d on approval %s has no audit record", a.Decision, a.DecidedBy, id)
		}
	}
	h, err := digestHistory(ctx, q, g.Transitions, asked, pending)
	if err != nil {
		return nil, fmt.Errorf("journal: verify the audit trail: %w", err)
	}
	if h.History != g.History || h.Approvals != g.Approvals {
		return &audit.RecordFault{Seq: recs[0].Seq, Kind: audit.Genesis, Problem: fmt.Sprintf(
			"the history before the trail (%d transitions, %d approvals) no longer matches its digest: a transition or an approval from before it was changed, removed or added", g.Transitions, g.Approvals)}, nil
	}
	opIDs := make([]string, 0, len(lastState))
	for id := range lastState {
		opIDs = append(opIDs, id)
	}
	slices.Sort(opIDs)
	for _, id := range opIDs {
		if f := checkOperation(id, fs.ops[id], lastState[id], lastSHA[id], fs.ops); f != nil {
			return f, nil
		}
	}
	return nil, nil
}

// checkOperation compares an operation's row with what its last records say.
func checkOperation(id string, o opRow, state State, sha string, ops map[string]opRow) *audit.RecordFault {
	bad := func(format string, args ...any) *audit.RecordFault {
		return &audit.RecordFault{Kind: "operation", Operation: id, Problem: fmt.Sprintf(format, args...)}
	}
	if _, ok := ops[id]; !ok {
		return bad("the operation is missing from the journal")
	}
	if o.state != state {
		return bad("state is %s in the journal; its last transition record says %s", o.state, state)
	}
	if sha == "" {
		return nil // created before the trail began, its payload never changed since
	}
	var p action.Payload
	if err := json.Unmarshal([]byte(o.payload), &p); err != nil {
		return bad("payload is not JSON: %v", err)
	}
	if o.sha256 != sha || p.SHA256() != sha {
		return bad("payload hashes to %s (stored %s); its last record says %s: the payload was changed", p.SHA256()[:12], o.sha256[:min(12, len(o.sha256))], sha[:min(12, len(sha))])
	}
	return nil
}

// readFacts reads the transitions, approvals and operations through q.
func (j *Journal) readFacts(ctx context.Context, q queryer) (facts, error) {
	fs := facts{transitions: map[int64]transitionRow{}, approvals: map[string]Approval{}, ops: map[string]opRow{},
		votes: map[voteKey]Vote{}, edits: map[editKey]Edit{}, grants: map[string]Grant{}, receipts: map[voteKey]string{}}
	if err := readBeyondTap(ctx, q, &fs); err != nil {
		return fs, fmt.Errorf("journal: verify the audit trail: %w", err)
	}
	rows, err := q.QueryContext(ctx, "SELECT seq, operation_id, from_state, to_state, reason, at FROM transitions")
	if err != nil {
		return fs, fmt.Errorf("journal: verify the audit trail: %w", err)
	}
	for rows.Next() {
		var row transitionRow
		if err := rows.Scan(&row.f.Transition, &row.op, &row.f.From, &row.f.To, &row.f.Reason, &row.f.At); err != nil {
			rows.Close()
			return fs, fmt.Errorf("journal: verify the audit trail: %w", err)
		}
		fs.transitions[row.f.Transition] = row
	}
	rows.Close()
	rows, err = q.QueryContext(ctx, "SELECT "+approvalColumns+" FROM approvals")
	if err != nil {
		return fs, fmt.Errorf("journal: verify the audit trail: %w", err)
	}
	for rows.Next() {
		a, err := scanApproval(rows)
		if err != nil {
			rows.Close()
			return fs, fmt.Errorf("journal: verify the audit trail: %w", err)
		}
		fs.approvals[a.ID] = a
	}
	rows.Close()
	rows, err = q.QueryContext(ctx, "SELECT id, state, payload, payload_sha256 FROM operations")
	if err != nil {
		return fs, fmt.Errorf("journal: verify the audit trail: %w", err)
	}
	defer rows.Close()
	for rows.Next() {
		var id string
		var o opRow
		if err := rows.Scan(&id, &o.state, &o.payload, &o.sha256); err != nil {
			return fs, fmt.Errorf("journal: verify the audit trail: %w", err)
		}
		fs.ops[id] = o
	}
	return fs, rows.Err()
}
