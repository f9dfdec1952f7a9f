package audit

import (
	"cmp"
	"encoding/json"
	"fmt"
	"slices"
)

// An export of a trail that holds receipts carries the approvers' passkey
// public keys: a line {"passkeys": [PasskeyKey, …]} after the last record and
// before the signature line, which covers it. Check verifies every receipt
// of the export with those keys alone.

// Passkeys is the line of an export that carries the approvers' public keys.
type Passkeys struct {
	Passkeys []PasskeyKey `json:"passkeys"`
}

// lined is a record and the line of the export it was read from.
type lined struct {
	line int
	r    Record
}

// passkeyVote is a vote record that says a passkey was given, and its body.
type passkeyVote struct {
	lined
	f VoteFact
}

// receiptCheck collects, while an export is read, what its receipts are
// checked against: the keys, the payload hash each approval was asked for,
// and the votes that claim a passkey.
type receiptCheck struct {
	keys      map[string]PasskeyKey // by credential id
	keysLine  int
	hashes    map[string]string // approval id -> payload_sha256, from approval records
	receipts  []lined
	passkeyed []passkeyVote // votes given with a passkey
	verified  int
	// asks are the approvals whose record asks a passkey, with how many
	// approvers; approved, the decision records that approved one.
	asks     map[string]int
	approved []lined
}

func newReceiptCheck() *receiptCheck {
	return &receiptCheck{hashes: map[string]string{}, asks: map[string]int{}}
}

// add notes a record of the export.
func (c *receiptCheck) add(line int, r Record) {
	switch r.Kind {
	case Receipt:
		c.receipts = append(c.receipts, lined{line, r})
	case Approval:
		var f ApprovalFact
		if json.Unmarshal(r.Body, &f) == nil && f.PayloadSHA256 != "" {
			c.hashes[r.Ref] = f.PayloadSHA256
		}
		if f.StepUp == PasskeyFactor {
			c.asks[r.Ref] = max(f.Required, 1)
		}
	case Decision:
		var f ApprovalFact
		if json.Unmarshal(r.Body, &f) == nil && f.Decision == DecisionApproved {
			c.approved = append(c.approved, lined{line, r})
		}
	case Vote:
		var f VoteFact
		if json.Unmarshal(r.Body, &f) == nil && f.StepUp == PasskeyFactor {
			c.passkeyed = append(c.passkeyed, passkeyVote{lined{line, r}, f})
		}
	}
}

// setKeys reads the passkeys line; its problem, or "".
func (c *receiptCheck) setKeys(line int, raw []byte) string {
	if c.keys != nil {
		return "a second passkeys line"
	}
	var p Passkeys
	if err := json.Unmarshal(raw, &p); err != nil {
		return fmt.Sprintf("a malformed passkeys line: %v", err)
	}
	c.keys, c.keysLine = map[string]PasskeyKey{}, line
	for _, k := range p.Passkeys {
		c.keys[k.Credential] = k
	}
	return ""
}

// verify checks every receipt against the keys, and that every vote given
// with a passkey has its receipt. It returns the first fault, naming the
// record and why, or nil.
func (c *receiptCheck) verify() *Fault {
	fault := func(l lined, format string, args ...any) *Fault {
		return &Fault{Line: l.line, Record: &RecordFault{Seq: l.r.Seq, Kind: l.r.Kind, Operation: l.r.Operation, Problem: fmt.Sprintf(format, args...)}}
	}
	proven := map[[2]string]string{} // (approval, approver) -> the payload hash their receipt signs
	signers := map[string]int{}      // approval -> approvers whose receipt verified
	for _, l := range c.receipts {
		var rc PasskeyReceipt
		if err := json.Unmarshal(l.r.Body, &rc); err != nil {
			return fault(l, "body is not a receipt: %v", err)
		}
		if rc.Approval != l.r.Ref {
			return fault(l, "the receipt is of approval %s, and the record names %s", rc.Approval, l.r.Ref)
		}
		if h, ok := c.hashes[rc.Approval]; ok && h != rc.PayloadSHA256 {
			return fault(l, "the receipt claims payload %.12s, and approval %s was asked for payload %.12s", rc.PayloadSHA256, rc.Approval, h)
		}
		k, ok := c.keys[rc.Credential]
		if !ok {
			return fault(l, "no public key of credential %s in the export: the receipt cannot be checked", short64(rc.Credential))
		}
		if err := VerifyReceipt(rc, k); err != nil {
			return fault(l, "%v", err)
		}
		if k := [2]string{rc.Approval, fmt.Sprint(rc.By)}; proven[k] == "" {
			proven[k] = rc.PayloadSHA256
			signers[rc.Approval]++
		}
		c.verified++
	}
	for _, l := range c.approved {
		if need, ok := c.asks[l.r.Ref]; ok && signers[l.r.Ref] < need {
			return fault(l, "approval %s asked a passkey of each of %d approver(s), and the export holds %d receipt(s) of it: approved without its approvers' signatures", l.r.Ref, need, signers[l.r.Ref])
		}
	}
	for _, v := range c.passkeyed {
		signed := proven[[2]string{v.r.Ref, fmt.Sprint(v.f.By)}]
		if signed == "" {
			return fault(v.lined, "the vote of %d on %s says a passkey was given, and the export holds no receipt of it", v.f.By, v.r.Ref)
		}
		// An export that begins after the approval's record (-since) has no
		// hash to check the receipt against but the vote's own.
		if v.f.PayloadSHA256 != "" && v.f.PayloadSHA256 != signed {
			return fault(v.lined, "the vote of %d on %s was given for payload %.12s, and its receipt signs payload %.12s", v.f.By, v.r.Ref, v.f.PayloadSHA256, signed)
		}
	}
	return nil
}

// sortedKeys returns the keys of the passkeys line by user, then credential.
func (c *receiptCheck) sortedKeys() []PasskeyKey {
	var ks []PasskeyKey
	for _, k := range c.keys {
		ks = append(ks, k)
	}
	slices.SortFunc(ks, func(a, b PasskeyKey) int {
		return cmp.Or(cmp.Compare(a.User, b.User), cmp.Compare(a.Credential, b.Credential))
	})
	return ks
}
