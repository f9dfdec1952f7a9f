package journal

import (
	"context"
	"encoding/json"
	"fmt"
	"reflect"
	"slices"

	"github.com/countersign/countersign/audit"
	"github.com/countersign/countersign/policy"
)

// The cross-check of the audit records of approvals beyond one tap: votes,
// escalations, edits, grants and revocations. Their tables began after the
// trail did, so every row must have its record and every record its row.

// beyondTap is what the records of these kinds were seen to cover.
type beyondTap struct {
	votes     map[voteKey]bool
	receipts  map[voteKey]bool
	escalated map[string]bool
	edits     map[editKey]bool
	grants    map[string]bool
	revoked   map[string]bool
}

func newBeyondTap() *beyondTap {
	return &beyondTap{votes: map[voteKey]bool{}, receipts: map[voteKey]bool{}, escalated: map[string]bool{}, edits: map[editKey]bool{},
		grants: map[string]bool{}, revoked: map[string]bool{}}
}

// check compares record r with the journal's row, and returns what is wrong
// ("" when nothing is).
func (b *beyondTap) check(fs facts, r audit.Record) string {
	switch r.Kind {
	case audit.Vote:
		var f audit.VoteFact
		if err := json.Unmarshal(r.Body, &f); err != nil || f.Approval != r.Ref {
			return "body does not describe a vote on " + r.Ref
		}
		k := voteKey{f.Approval, policy.UserID(f.By)}
		if b.votes[k] {
			return fmt.Sprintf("the vote of %d on %s has a record already: a fact has one record, and this one was added", f.By, f.Approval)
		}
		b.votes[k] = true
		v, ok := fs.votes[k]
		switch {
		case !ok:
			return fmt.Sprintf("the vote of %d on %s is missing from the journal", f.By, f.Approval)
		case ms(v.At) != f.At || v.Grant != f.Grant:
			return fmt.Sprintf("the vote of %d on %s in the journal is at %d (grant %q); the record says %d (grant %q)", f.By, f.Approval, ms(v.At), v.Grant, f.At, f.Grant)
		case string(v.StepUp) != f.StepUp:
			return fmt.Sprintf("the vote of %d on %s in the journal was given with %q; the record says %q", f.By, f.Approval, v.StepUp, f.StepUp)
		case f.StepUp != "" && f.PayloadSHA256 != fs.approvals[f.Approval].PayloadSHA256:
			return fmt.Sprintf("the vote of %d on %s was given with %s for payload %s; the approval is of %s", f.By, f.Approval, f.StepUp, f.PayloadSHA256, fs.approvals[f.Approval].PayloadSHA256)
		}
	case audit.Receipt:
		return b.checkReceipt(fs, r)
	case audit.Escalation:
		var f audit.EscalationFact
		if err := json.Unmarshal(r.Body, &f); err != nil || f.Approval != r.Ref {
			return "body does not describe an escalation of " + r.Ref
		}
		if b.escalated[f.Approval] {
			return fmt.Sprintf("the escalation of %s has a record already: a fact has one record, and this one was added", f.Approval)
		}
		b.escalated[f.Approval] = true
		if a, ok := fs.approvals[f.Approval]; !ok || ms(a.Escalated) != f.At || a.OperationID != r.Operation {
			return fmt.Sprintf("approval %s in the journal was not escalated at %d, as the record says", f.Approval, f.At)
		}
	case audit.Edit:
		var f audit.EditFact
		if err := json.Unmarshal(r.Body, &f); err != nil || f.Approval != r.Ref {
			return "body does not describe an edit voiding " + r.Ref
		}
		k := editKey{r.Operation, f.Seq}
		if b.edits[k] {
			return fmt.Sprintf("edit %d of %s has a record already: a fact has one record, and this one was added", f.Seq, r.Operation)
		}
		b.edits[k] = true
		e, ok := fs.edits[k]
		switch {
		case !ok:
			return fmt.Sprintf("edit %d of %s is missing from the journal", f.Seq, r.Operation)
		case e.fact() != f:
			return fmt.Sprintf("edit %d of %s in the journal is %s; the record says %s", f.Seq, r.Operation, mustJSON(e.fact()), r.Body)
		case e.Old.SHA256() != e.OldSHA256:
			return fmt.Sprintf("edit %d of %s: the payload it replaced hashes to %s, not %s: it was changed", f.Seq, r.Operation, short(e.Old.SHA256()), short(e.OldSHA256))
		}
	case audit.Grant, audit.Revoke:
		var f audit.GrantFact
		if err := json.Unmarshal(r.Body, &f); err != nil || f.Grant != r.Ref {
			return "body does not describe grant " + r.Ref
		}
		g, ok := fs.grants[f.Grant]
		if !ok {
			return fmt.Sprintf("grant %s is missing from the journal", f.Grant)
		}
		if r.Kind == audit.Revoke && b.revoked[f.Grant] || r.Kind == audit.Grant && b.grants[f.Grant] {
			return fmt.Sprintf("grant %s has a %s record already: a fact has one record, and this one was added", f.Grant, r.Kind)
		}
		if r.Kind == audit.Revoke {
			b.revoked[f.Grant] = true
			if int64(g.RevokedBy) != f.RevokedBy || ms(g.Revoked) != f.At {
				return fmt.Sprintf("grant %s in the journal was revoked by %d at %d; the record says %d at %d", f.Grant, g.RevokedBy, ms(g.Revoked), f.RevokedBy, f.At)
			}
			return ""
		}
		b.grants[f.Grant] = true
		if want := g.fact(); !reflect.DeepEqual(want, f) {
			return fmt.Sprintf("grant %s in the journal is %s; the record says %s", f.Grant, mustJSON(want), r.Body)
		}
	}
	return ""
}

// unrecorded returns the first row of these tables that has no record.
func (b *beyondTap) unrecorded(fs facts) *audit.RecordFault {
	missing := func(kind, op, format string, args ...any) *audit.RecordFault {
		return &audit.RecordFault{Kind: kind, Operation: op, Problem: fmt.Sprintf(format, args...)}
	}
	for _, k := range sortedKeys(fs.votes, func(a, b voteKey) int { return compareKeys(a.approval, b.approval, int64(a.by), int64(b.by)) }) {
		if !b.votes[k] {
			return missing(audit.Vote, fs.approvals[k.approval].OperationID, "the vote of %d on %s has no audit record", k.by, k.approval)
		}
	}
	for _, k := range sortedKeys(fs.receipts, func(a, b voteKey) int { return compareKeys(a.approval, b.approval, int64(a.by), int64(b.by)) }) {
		if !b.receipts[k] {
			return missing(audit.Receipt, fs.approvals[k.approval].OperationID, "the passkey receipt of %d on %s has no audit record", k.by, k.approval)
		}
	}
	for _, k := range sortedKeys(fs.edits, func(a, b editKey) int { return compareKeys(a.op, b.op, int64(a.seq), int64(b.seq)) }) {
		if !b.edits[k] {
			return missing(audit.Edit, k.op, "edit %d of %s has no audit record", k.seq, k.op)
		}
	}
	for _, id := range sortedKeys(fs.grants, func(a, b string) int { return compareKeys(a, b, 0, 0) }) {
		g := fs.grants[id]
		if !b.grants[id] {
			return missing(audit.Grant, "", "grant %s by %d has no audit record", id, g.By)
		}
		if !g.Revoked.IsZero() && !b.revoked[id] {
			return missing(audit.Revoke, "", "the revocation of grant %s by %d has no audit record", id, g.RevokedBy)
		}
	}
	for _, id := range sortedKeys(fs.approvals, func(a, b string) int { return compareKeys(a, b, 0, 0) }) {
		if a := fs.approvals[id]; !a.Escalated.IsZero() && !b.escalated[id] {
			return missing(audit.Escalation, a.OperationID, "the escalation of approval %s has no audit record", id)
		}
	}
	return nil
}

func sortedKeys[K comparable, V any](m map[K]V, cmp func(a, b K) int) []K {
	keys := make([]K, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	slices.SortFunc(keys, cmp)
	return keys
}

func compareKeys(a, b string, x, y int64) int {
	switch {
	case a < b:
		return -1
	case a > b:
		return 1
	case x < y:
		return -1
	case x > y:
		return 1
	}
	return 0
}

// readBeyondTap reads the votes, edits and grants into fs through q.
func readBeyondTap(ctx context.Context, q queryer, fs *facts) error {
	rows, err := q.QueryContext(ctx, "SELECT approval_id, voter, at, grant_id, step_up, receipt FROM approval_votes")
	if err != nil {
		return err
	}
	for rows.Next() {
		var id, receipt string
		var v Vote
		var at int64
		if err := rows.Scan(&id, &v.By, &at, &v.Grant, &v.StepUp, &receipt); err != nil {
			rows.Close()
			return err
		}
		v.At = fromMS(at)
		fs.votes[voteKey{id, v.By}] = v
		if receipt != "" {
			fs.receipts[voteKey{id, v.By}] = receipt
		}
	}
	rows.Close()
	es, err := readEdits(ctx, q, "SELECT operation_id, seq, old_payload, old_sha256, new_sha256, edited_by, at, approval_id FROM payload_edits")
	if err != nil {
		return err
	}
	for _, e := range es {
		fs.edits[editKey{e.Operation, e.Seq}] = e
	}
	rows, err = q.QueryContext(ctx, "SELECT "+grantColumns+" FROM grants")
	if err != nil {
		return err
	}
	defer rows.Close()
	for rows.Next() {
		g, err := scanGrant(rows)
		if err != nil {
			return err
		}
		fs.grants[g.ID] = g
	}
	return rows.Err()
}

// checkReceipt compares a receipt record with the receipt its vote keeps.
func (b *beyondTap) checkReceipt(fs facts, r audit.Record) string {
	var f audit.PasskeyReceipt
	if err := json.Unmarshal(r.Body, &f); err != nil || f.Approval != r.Ref {
		return "body does not describe a passkey receipt of " + r.Ref
	}
	k := voteKey{f.Approval, policy.UserID(f.By)}
	if b.receipts[k] {
		return fmt.Sprintf("the passkey receipt of %d on %s has a record already: a fact has one record, and this one was added", f.By, f.Approval)
	}
	b.receipts[k] = true
	kept, ok := fs.receipts[k]
	switch {
	case !ok:
		return fmt.Sprintf("the vote of %d on %s in the journal keeps no passkey receipt, and the record is one", f.By, f.Approval)
	case !audit.SameJSON([]byte(kept), r.Body):
		return fmt.Sprintf("the passkey receipt of %d on %s in the journal differs from its record", f.By, f.Approval)
	}
	return ""
}
