package audit

import "encoding/json"

// The bodies of the audit records, one type a kind (Receipt's is
// PasskeyReceipt, in receipt.go). The journal writes exactly these, and Check
// reads them back: which votes must carry a receipt, and which approvals were
// approved, is decided from their fields. Defined here, beside the check,
// rather than in the journal, a field or a value the check relies on cannot be
// renamed on the writing side alone, leaving the check to find nothing to
// require and pass.
//
// Their JSON is part of the trail: the hash chain covers each body's bytes,
// and the journal's genesis digest hashes the JSON of the transitions and
// approvals before the trail, so field order, tags and omitempty are the
// format of every trail written so far, which TestFactsKeepTheirWireFormat
// holds them to. Ids of people are the Telegram user ids (int64), and states,
// decisions and factors plain strings, because this package imports none of
// the project's (the journal converts its own types).

// Values the check looks for in the bodies it reads.
const (
	// PasskeyFactor is the StepUp of an ApprovalFact that asks a passkey, and
	// of a VoteFact given with one: such a vote must have its receipt in the
	// export, and such an approval, once approved, a receipt of each of its
	// approvers.
	PasskeyFactor = "passkey"
	// DecisionApproved is the Decision of a decision record that approved its
	// approval: the one an approval asked with a passkey needs receipts for.
	DecisionApproved = "approved"
)

// TransitionFact is the body of a Transition record: the row of transitions,
// and what the move recorded with it that a person may ask about later. The
// journal's queued write on PostgreSQL splices the seq into the body after
// `{"transition":`, so Transition stays its first field.
type TransitionFact struct {
	Transition    int64           `json:"transition"`
	From          string          `json:"from"`
	To            string          `json:"to"`
	Reason        string          `json:"reason"`
	At            int64           `json:"at"` // Unix milliseconds, as every At of these bodies
	Task          string          `json:"task,omitempty"`
	Tool          string          `json:"tool,omitempty"`
	Surface       string          `json:"surface,omitempty"`
	Transport     string          `json:"transport,omitempty"`
	PayloadSHA256 string          `json:"payload_sha256,omitempty"` // at creation, and on every change of payload
	Result        json.RawMessage `json:"result,omitempty"`
	Replica       string          `json:"replica,omitempty"`
}

// ApprovalFact is the body of an Approval record, and of a Decision record
// (Decision, By, At and Grant set, the rest of the approval left out).
type ApprovalFact struct {
	Approval      string `json:"approval"`
	PayloadSHA256 string `json:"payload_sha256,omitempty"`
	Requester     int64  `json:"requester,omitempty"`
	Created       int64  `json:"created,omitempty"`
	Expires       int64  `json:"expires,omitempty"`
	Decision      string `json:"decision,omitempty"` // DecisionApproved, "rejected", "expired", "withdrawn", "edited"
	By            int64  `json:"by,omitempty"`
	At            int64  `json:"at,omitempty"`
	Required      int    `json:"required,omitempty"` // asked, when more than one
	Grant         string `json:"grant,omitempty"`    // decided under a grant
	StepUp        string `json:"step_up,omitempty"`  // the second factor asked, when one is (PasskeyFactor, "totp")
}

// VoteFact is the body of a Vote record: one approver's approval, the Of-th
// of the Required the approval needs.
type VoteFact struct {
	Approval string `json:"approval"`
	By       int64  `json:"by"`
	At       int64  `json:"at"`
	Grant    string `json:"grant,omitempty"`
	Of       int    `json:"of"`
	Required int    `json:"required"`
	// StepUp is the second factor given with the tap (PasskeyFactor,
	// "totp"), and PayloadSHA256 the hash of the payload it was given for,
	// when one was.
	StepUp        string `json:"step_up,omitempty"`
	PayloadSHA256 string `json:"payload_sha256,omitempty"`
}

// EscalationFact is the body of an Escalation record.
type EscalationFact struct {
	Approval string `json:"approval"`
	At       int64  `json:"at"`
}

// EditFact is the body of an Edit record: the payload the edit replaced and
// the one it put in its place, by their hashes, and the approval it voided.
type EditFact struct {
	Seq      int    `json:"seq"`
	Old      string `json:"old_sha256"`
	New      string `json:"new_sha256"`
	By       int64  `json:"by"`
	At       int64  `json:"at"`
	Approval string `json:"approval"`
}

// GrantFact is the body of a Grant record, and of a Revoke record (Grant,
// By, At and RevokedBy set).
type GrantFact struct {
	Grant     string      `json:"grant"`
	Kind      string      `json:"kind,omitempty"` // "operations", "window"
	By        int64       `json:"by"`
	At        int64       `json:"at"`
	Until     int64       `json:"until,omitempty"`
	Tool      string      `json:"tool,omitempty"`
	Target    string      `json:"target,omitempty"`
	Task      string      `json:"task,omitempty"`
	Items     []GrantItem `json:"items,omitempty"`
	RevokedBy int64       `json:"revoked_by,omitempty"`
}

// GrantItem is one approval an operations grant approves: its operation and
// the hash of the payload the card showed. The journal keeps a grant's items
// as this JSON too.
type GrantItem struct {
	Approval      string `json:"approval"`
	Operation     string `json:"operation"`
	PayloadSHA256 string `json:"payload_sha256"`
}

// GenesisFact is the body of the first record: what the journal held before
// the trail began, so that an edit of that history is caught too. Transitions
// through seq Transitions, and the Approvals approvals that have no approval
// record, are hashed into History; Pending names those that were still
// waiting, whose decision, when it comes, has a record of its own.
type GenesisFact struct {
	Transitions int64    `json:"transitions_through"`
	Approvals   int      `json:"approvals"`
	Pending     []string `json:"pending,omitempty"`
	History     string   `json:"history_sha256"`
}
