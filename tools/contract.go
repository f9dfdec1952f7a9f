// Package tools holds the tool contract (the one normalized result every call ends
// in), the tools themselves and the registry that offers them. The system fills the
// result from what really happened; the words of a model never set it.
package tools

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"sort"
	"strconv"
	"strings"

	"github.com/countersign/countersign/secret"
)

// Status is the outcome class of a tool call.
type Status string

// The statuses of the contract. StatusPending is a commit waiting for a human's tap.
const (
	StatusSucceeded  Status = "succeeded"
	StatusRetryable  Status = "retryable"
	StatusRepairable Status = "repairable"
	StatusTerminal   Status = "terminal"
	StatusPending    Status = "pending"
)

// SideEffect is what the call did to the world, as far as the system knows.
type SideEffect string

// The side effects of the contract.
const (
	SideEffectNone      SideEffect = "none"
	SideEffectPrepared  SideEffect = "prepared"
	SideEffectCommitted SideEffect = "committed"
	SideEffectUnknown   SideEffect = "unknown"
)

// NextAction is what the caller should do next.
type NextAction string

// The next actions of the contract.
const (
	NextNone          NextAction = "none"
	NextRetry         NextAction = "retry"
	NextRepair        NextAction = "repair"
	NextStop          NextAction = "stop"
	NextVerify        NextAction = "verify"
	NextAwaitApproval NextAction = "await_approval"
)

// Cause names why a call stopped, for code that acts on it (a loop that ends a
// turn, a card that says "expired"); Reason says the same in words for people.
type Cause string

// The causes code acts on. Empty is a stop that needs no special handling.
const (
	CauseDoomLoop        Cause = "doom_loop"        // the same call again, after it failed or went through
	CauseApprovalExpired Cause = "approval_expired" // nobody decided in time
	CauseRejected        Cause = "rejected"         // an approver said no
	CauseBudget          Cause = "budget_exhausted" // a retry, wait or repair budget is spent
	CauseNoSender        Cause = "no_sender"        // no process runs that would deliver it: nothing was created
	CauseDiskFull        Cause = "disk_full"        // the journal had no room to record the call
	CauseQuorum          Cause = "quorum"           // counted: more approvers must approve before it is sent
)

// Evidence is the observable fact of a success: where the message is and its
// ids; for an HTTP request, the service's status and the reference its answer
// gave of what was made (an id, read at the declared JSON pointer).
type Evidence struct {
	ChatID     string  `json:"chat_id,omitempty"`
	MessageIDs []int64 `json:"message_ids,omitempty"`
	HTTPStatus int     `json:"http_status,omitempty"`
	Ref        string  `json:"ref,omitempty"`
}

// Result is the normalized end of every tool call.
type Result struct {
	Status       Status     `json:"status"`
	OperationID  string     `json:"operation_id"`
	SideEffect   SideEffect `json:"side_effect"`
	RetryAfterMS int64      `json:"retry_after_ms,omitempty"`
	NextAction   NextAction `json:"next_action"`
	Evidence     *Evidence  `json:"evidence,omitempty"`
	// Cause, on a stop (or a wait that nothing will end), names why in a form code can test.
	Cause Cause `json:"cause,omitempty"`
	// Reason is a short plain-words account for the human or the model.
	Reason string `json:"reason,omitempty"`
	// Draft is the text a prepare_* tool built.
	Draft string `json:"draft,omitempty"`
	// Action, on a success, is the payload's action (send_message,
	// edit_message, delete_message): what was done, for the words that say so.
	Action string `json:"action,omitempty"`
}

// The actions a payload names, written by the tools and read by the surfaces
// that word what a commit did.
const (
	ActionSendMessage   = "send_message"
	ActionPublishPost   = "publish_post"
	ActionEditMessage   = "edit_message"
	ActionDeleteMessage = "delete_message"
	ActionPinMessage    = "pin_message"
	ActionUnpinMessage  = "unpin_message"
	ActionHTTPRequest   = "http_request"
)

// Payload is exactly what a commit will deliver. An approval binds to its SHA256.
type Payload struct {
	Action    string `json:"action"`
	Target    string `json:"target,omitempty"`
	Text      string `json:"text"`
	ParseMode string `json:"parse_mode,omitempty"`
	// Parts is the text split into messages Telegram accepts, when it needs more
	// than one. It is fixed at prepare time and covered by the hash, so a resumed
	// commit sends the same parts a human approved.
	Parts []string `json:"parts,omitempty"`
	// MessageID is the message in Target that the action acts on (an edit), and
	// Before what it reads now: the approver sees the change, and approves it.
	MessageID int64  `json:"message_id,omitempty"`
	Before    string `json:"before,omitempty"`
	// Removes marks an action that takes the message away (a delete); Notify
	// one that tells the chat's members (a pin that is not silent).
	Removes bool `json:"removes,omitempty"`
	Notify  bool `json:"notify,omitempty"`
	// Caption marks an edit of a file's caption rather than of a text.
	Caption bool `json:"caption,omitempty"`
	// Files are the files the action sends (a photo, a document, an album's
	// items), each named by its content's SHA-256; Text is a single file's
	// caption.
	Files []File `json:"files,omitempty"`
	// Request is the HTTP request a declared HTTP tool makes, every byte of it
	// but the values of the headers that come from the environment (secrets,
	// named here by their variable). Target is its URL's host, Text its body
	// as the card shows it.
	Request *HTTPRequest `json:"request,omitempty"`
	// Poll is a poll's options and settings; Text is its question.
	Poll *Poll `json:"poll,omitempty"`
	// From is the chat a copy or a forward takes message MessageID from;
	// Target is where it goes.
	From string `json:"from,omitempty"`
	// Changed is what the call said changed since a person rejected the same
	// payload ("changed", see changed.go): the card shows it, and the verifier
	// lets the payload be asked again.
	Changed string `json:"changed,omitempty"`
}

// Messages returns the texts to deliver, one per message.
func (p Payload) Messages() []string {
	if len(p.Parts) > 0 {
		return p.Parts
	}
	return []string{p.Text}
}

// SHA256 is the hex digest of the payload's canonical JSON form.
func (p Payload) SHA256() string {
	b, _ := json.Marshal(p) // a struct of strings always marshals
	sum := sha256.Sum256(b)
	return hex.EncodeToString(sum[:])
}

// Fingerprint identifies a call of t by its arguments as t reads them (see
// canonical): whatever the key order or spacing of the JSON, a null or a key t does
// not take, however chat_id spells its chat (a number, "+222", "@News_Desk"), the
// same call has the same fingerprint, so the loop guard sees it issued twice.
func Fingerprint(t Tool, args json.RawMessage) string {
	canon := []byte(args)
	if m, ok := canonical(t, args); ok {
		canon, _ = json.Marshal(m) // maps marshal with sorted keys
	} else if compact := new(bytes.Buffer); json.Compact(compact, args) == nil {
		canon = compact.Bytes()
	}
	sum := sha256.Sum256(append([]byte(t.Name()+"\x00"), canon...))
	return hex.EncodeToString(sum[:])
}

// Brief is a call of t in a few words, for a person reading why it stopped:
// `commit_send_message(chat_id: "222", text: "Hello…")`. Long strings are cut, and
// a value that looks like a secret is withheld.
func Brief(t Tool, args json.RawMessage) string {
	m, ok := canonical(t, args)
	if !ok {
		return t.Name() + "(arguments that are not a JSON object)"
	}
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	parts := make([]string, len(keys))
	for i, k := range keys {
		parts[i] = k + ": " + briefValue(m[k])
	}
	return t.Name() + "(" + strings.Join(parts, ", ") + ")"
}

func briefValue(v any) string {
	const width = 40
	s, isString := v.(string)
	if !isString {
		b, _ := json.Marshal(v)
		s = string(b)
	}
	switch {
	case secret.Contains(s):
		return "(withheld: it looks like a secret)"
	case isString:
		return strconv.Quote(excerpt(s, width))
	}
	return excerpt(s, width)
}
