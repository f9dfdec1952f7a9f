package journal

import (
	"time"

	"github.com/countersign/countersign/action"
)

// View is an operation as scripts and agents read it (countersign ops -json, the MCP
// tools): the payload flattened, and the audit log when the caller adds it.
type View struct {
	ID            string         `json:"id"`
	TaskID        string         `json:"task_id"`
	Tool          string         `json:"tool"`
	State         State          `json:"state"`
	Action        string         `json:"action,omitempty"`
	Target        string         `json:"target,omitempty"`
	Text          string         `json:"text,omitempty"`
	PayloadSHA256 string         `json:"payload_sha256"`
	Attempts      int            `json:"attempts"`
	RetryAt       *time.Time     `json:"retry_at,omitempty"`
	Result        *action.Result `json:"result,omitempty"`
	Envelope      string         `json:"envelope,omitempty"`
	// ClaimedBy is the replica that moved the operation last (among replicas).
	ClaimedBy   string       `json:"claimed_by,omitempty"`
	Created     time.Time    `json:"created"`
	Updated     time.Time    `json:"updated"`
	Transitions []Transition `json:"transitions,omitempty"`
	Attempted   []Attempt    `json:"attempt_log,omitempty"`
}

// View returns the operation's View, without its audit log.
func (op Operation) View() View {
	v := View{ID: op.ID, TaskID: op.TaskID, Tool: op.Tool, State: op.State, Action: op.Payload.Action,
		Target: op.Payload.Target, Text: op.Payload.Text, PayloadSHA256: op.PayloadSHA256, Attempts: op.Attempts,
		Result: op.Result, Envelope: op.Envelope, ClaimedBy: op.ClaimedBy, Created: op.Created, Updated: op.Updated}
	if !op.RetryAt.IsZero() {
		v.RetryAt = &op.RetryAt
	}
	return v
}
