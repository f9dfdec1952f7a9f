package model

import (
	"errors"
	"fmt"
	"net/http"
	"strconv"
	"strings"
	"time"
)

// Action is what Recovery did after one request.
type Action string

// The actions of Recovery.
const (
	ActionOK       Action = "ok"               // the reply is returned
	ActionRetry    Action = "retry"            // wait, then ask again
	ActionFallback Action = "fallback"         // the next request goes to the fallback model
	ActionRaise    Action = "raise_max_tokens" // ask again with a higher output limit
	ActionStop     Action = "stop"             // give up
)

// Step is one transition of Recovery, recorded so that the path taken can be
// checked, not only where it ended.
type Step struct {
	Attempt int
	Model   string // the model of the next request for a fallback, else of this one
	Action  Action
	// Cause is what the request met: an HTTP status ("429"), an error type for a
	// status-200 stream error ("overloaded_error"), "connection", "max_tokens".
	Cause string
	Wait  time.Duration
	// Detail is the reason to stop, the fallback model, or the raised limit.
	Detail string
}

// String is the step in a trace: "retry(429, wait 2s)", "fallback(m)",
// "raise_max_tokens(2048)", "ok", "stop(401: status not retryable)".
func (s Step) String() string {
	switch s.Action {
	case ActionRetry:
		return fmt.Sprintf("retry(%s, wait %s)", s.Cause, s.Wait)
	case ActionStop:
		return fmt.Sprintf("stop(%s: %s)", s.Cause, s.Detail)
	}
	if s.Detail != "" {
		return fmt.Sprintf("%s(%s)", s.Action, s.Detail)
	}
	return string(s.Action)
}

// Trace joins steps with arrows.
func Trace(steps []Step) string { return Arrows(steps) }

// Arrows joins the items' strings with arrows: a path through a state machine.
func Arrows[T fmt.Stringer](items []T) string {
	parts := make([]string, len(items))
	for i, it := range items {
		parts[i] = it.String()
	}
	return strings.Join(parts, " -> ")
}

// GiveUpError is Recovery giving up: after how many requests, why, and the last
// cause, which Unwrap returns (with the context's error when ctx ended, and
// ErrTurnBudget when the turn's requests were spent).
type GiveUpError struct {
	Attempts int
	Reason   string
	// RetryAfter is how long the service asked to wait, when that exceeded the wait
	// budget left.
	RetryAfter time.Duration
	Err        error
	also       error // the context's error, or ErrTurnBudget
}

// Error says why, after how many requests, and the last cause.
func (e *GiveUpError) Error() string {
	return fmt.Sprintf("agent: gave up after %d request(s): %s: %v", e.Attempts, e.Reason, e.Err)
}

// Unwrap returns the last cause and, when ctx ended, the context's error;
// when the turn's requests were spent, ErrTurnBudget.
func (e *GiveUpError) Unwrap() []error {
	if e.also != nil {
		return []error{e.Err, e.also}
	}
	return []error{e.Err}
}

// failure is a classified request error.
type failure struct {
	cause     string
	retryable bool
	overload  bool
	reason    string // why not retryable
	api       *APIError
}

// retryStatuses are retried; 503 and 529 are overloads, retried too.
var retryStatuses = map[int]bool{429: true, 500: true, 502: true, 504: true}

// quotaCodes mark limits that waiting minutes does not lift.
var quotaCodes = map[string]bool{
	"insufficient_quota": true, "enforced_spend_limit_reached": true, "contract_spend_limit_reached": true,
	"organization_spend_limit_exceeded": true, "project_spend_limit_exceeded": true, "credit_balance_exhausted": true,
}

// classify reads a provider error by its type and status, never its text (but see
// promptTooLong).
func classify(err error) failure {
	var ae *APIError
	switch {
	case errors.Is(err, ErrPromptTooLong):
		errors.As(err, &ae)
		return failure{cause: statusLabel(ae), reason: "prompt too long", api: ae}
	case errors.As(err, &ae):
		return classifyAPI(ae)
	case errors.Is(err, ErrConnection):
		return failure{cause: "connection", retryable: true}
	}
	return failure{cause: "error", reason: "not a service error"}
}

func classifyAPI(e *APIError) failure {
	f := failure{cause: statusLabel(e), api: e}
	status := e.Status
	if status == http.StatusOK {
		// An error event inside a stream that began with 200: it is retried like
		// its HTTP twin, which its type or code names.
		status = max(streamTwins[e.Type], streamTwins[e.Code])
	}
	switch {
	case quotaCodes[e.Code] || quotaCodes[e.Type]:
		f.reason = "quota or spend limit reached"
	case e.Type == "overloaded_error" || status == 529 || status == 503:
		f.retryable, f.overload = true, true
	case retryStatuses[status]:
		f.retryable = true
	default:
		f.reason = "status not retryable"
	}
	return f
}

// streamTwins are the HTTP statuses whose errors the services also send inside a
// stream, by the type or code they carry there: Anthropic's error event types, and
// the error object OpenAI-compatible servers put in a data line.
var streamTwins = map[string]int{
	"overloaded_error": 529, "api_error": 500, "rate_limit_error": 429, "timeout_error": 504,
	"server_error": 500, "service_unavailable_error": 503, "server_is_overloaded": 503,
	"rate_limit_exceeded": 429, "internal_server_error": 500,
}

// statusLabel is the status, or the error type when the status says nothing (an
// error event inside a stream that began with 200).
func statusLabel(e *APIError) string {
	switch {
	case e == nil:
		return "error"
	case e.Status == 200 && e.Type != "":
		return e.Type
	}
	return strconv.Itoa(e.Status)
}
