package action

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
	CauseChanged         Cause = "changed"          // what the approval quoted changed before it left: nothing was sent
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
