// Package envelope defines the "unknown outcome" envelope: one Markdown note per
// operation whose outcome is not known for sure (a Telegram send that timed out
// after the request was written, say), and its exact Markdown form.
//
// A note is YAML front matter, which is the source of truth for the status, followed
// by a short body a person can read on a phone:
//
//	---
//	operation_id: op-7k2m9q
//	status: unknown
//	...
//	---
//
//	- Request created: yes
//	- Service response: timeout after the request was sent
//	- Retry without verification: forbidden
//	- Verify: look for the message in chat 222; then `/resolve op-7k2m9q delivered|not_delivered`
//	- Excerpt: "Hello ***"
//
// Render and Parse are inverses: Parse(Render(e)) equals e field by field, for an
// envelope whose times are in UTC (as Parse returns them). A person may resolve a note
// by hand in an editor by changing status and next_action; Parse honours that.
//
// The package does not mask or withhold anything: hygiene is the vault's job.
package envelope

import (
	"errors"
	"fmt"
	"time"
)

// Status is the state of an operation's outcome.
type Status string

// The three statuses. Any other value is rejected by Parse and Render.
const (
	StatusUnknown      Status = "unknown"       // the request may or may not have taken effect
	StatusCommitted    Status = "committed"     // verified: it took effect (delivered)
	StatusNotCommitted Status = "not_committed" // verified: it did not take effect
)

// Values of Envelope.NextAction: NextVerify while the outcome is unknown; Resolve
// writes one of the other two.
const (
	NextVerify       = "verify-before-retry"
	NextNone         = "none"
	NextRetryAllowed = "retry-allowed"
)

// Values of Envelope.Resolution written by Resolve.
const (
	ResolutionDelivered    = "delivered"
	ResolutionNotDelivered = "not_delivered"
)

// Values of Envelope.Action known to the operator.
const (
	ActionSendMessage = "send_message"
	ActionPublishPost = "publish_post"
)

// Sentinel errors returned (wrapped) by Parse, Render and Validate.
var (
	// ErrNoFrontMatter: the note does not start with a "---" line.
	ErrNoFrontMatter = errors.New("envelope: no front matter")
	// ErrUnterminated: the note opens a front matter that no "---" line closes.
	ErrUnterminated = errors.New("envelope: front matter not terminated")
	// ErrYAML: the front matter is not valid YAML, or holds an unknown or duplicate key.
	ErrYAML = errors.New("envelope: bad front matter")
	// ErrInvalid: a field is missing or out of range; the message names the field.
	ErrInvalid = errors.New("envelope: invalid field")
)

// Envelope is one operation whose outcome is unknown, or was unknown until resolved.
// Front matter fields carry yaml tags; Response and Excerpt live in the note's body.
type Envelope struct {
	OperationID    string     `yaml:"operation_id"`          // required, see CheckID
	Action         string     `yaml:"action"`                // ActionSendMessage, ActionPublishPost
	Tool           string     `yaml:"tool"`                  // e.g. "commit_send_message"
	Status         Status     `yaml:"status"`                // required, one of the three
	LastConfirmed  string     `yaml:"last_confirmed"`        // last state known for sure, e.g. "prepared"
	NextAction     string     `yaml:"next_action"`           // NextVerify, NextNone, NextRetryAllowed
	Target         string     `yaml:"target"`                // chat id or @channel; always quoted in YAML
	PayloadSHA256  string     `yaml:"payload_sha256"`        // hex digest of the exact payload
	Created        time.Time  `yaml:"created"`               // written in UTC
	Expires        time.Time  `yaml:"expires"`               // written in UTC; zero means never
	Attempts       int        `yaml:"attempts"`              // requests made so far
	Resolution     string     `yaml:"resolution,omitempty"`  // ResolutionDelivered, ResolutionNotDelivered
	ResolvedBy     string     `yaml:"resolved_by,omitempty"` // who verified, e.g. "@alice"
	ResolvedAt     *time.Time `yaml:"resolved_at,omitempty"` // when, in UTC
	SecretWithheld bool       `yaml:"secret_withheld,omitempty"`
	// Items are what a person looks for one by one when the operation sent
	// several things at once (an album's files), each a line naming it by
	// kind, name and hash: any of them may have landed.
	Items []string `yaml:"items,omitempty"`

	// Response is what the service said, e.g. "timeout after the request was sent".
	Response string `yaml:"-"`
	// Excerpt is a short excerpt of the message text (the vault masks it).
	Excerpt string `yaml:"-"`
}

// Unresolved reports whether the outcome is still unknown.
func (e Envelope) Unresolved() bool { return e.Status == StatusUnknown }

// Resolve records a verified outcome: delivered gives status committed and next action
// none; not delivered gives not_committed and retry-allowed. at is stored in UTC.
// Resolve overwrites an earlier resolution; deciding whether that is allowed is the
// caller's business.
func (e *Envelope) Resolve(delivered bool, by string, at time.Time) {
	at = at.UTC()
	if delivered {
		e.Status, e.NextAction, e.Resolution = StatusCommitted, NextNone, ResolutionDelivered
	} else {
		e.Status, e.NextAction, e.Resolution = StatusNotCommitted, NextRetryAllowed, ResolutionNotDelivered
	}
	e.ResolvedBy = by
	e.ResolvedAt = &at
}

// Validate checks what Render and Parse require: a well-formed operation id and one of
// the three statuses. Its errors wrap ErrInvalid and name the field.
func (e Envelope) Validate() error {
	if err := CheckID(e.OperationID); err != nil {
		return err
	}
	switch e.Status {
	case StatusUnknown, StatusCommitted, StatusNotCommitted:
		return nil
	case "":
		return fmt.Errorf("%w: status: missing", ErrInvalid)
	}
	return fmt.Errorf("%w: status %q: want unknown, committed or not_committed", ErrInvalid, e.Status)
}

// maxIDLen bounds an operation id, which becomes a file name.
const maxIDLen = 128

// CheckID reports whether id can be an operation id: 1 to 128 ASCII letters, digits,
// '.', '_' or '-', starting with a letter or digit. Such an id is safe as a file name
// and as a glob pattern. Its errors wrap ErrInvalid.
func CheckID(id string) error {
	if id == "" {
		return fmt.Errorf("%w: operation_id: missing", ErrInvalid)
	}
	if len(id) > maxIDLen {
		return fmt.Errorf("%w: operation_id: longer than %d bytes", ErrInvalid, maxIDLen)
	}
	for i := 0; i < len(id); i++ {
		c := id[i]
		alnum := c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9'
		if !alnum && (i == 0 || c != '.' && c != '_' && c != '-') {
			// The id is not echoed: a malformed one might be a pasted secret.
			return fmt.Errorf("%w: operation_id: want letters, digits, '.', '_' or '-', starting with a letter or digit", ErrInvalid)
		}
	}
	return nil
}
