package model

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"strconv"
	"strings"
	"time"
)

// Sentinel errors, matched with errors.Is.
var (
	// ErrPromptTooLong: the conversation does not fit the model's context window. An
	// *APIError that says so matches it; shortening the prompt is the caller's job.
	ErrPromptTooLong = errors.New("agent: prompt too long")
	// ErrConnection: no answer came from the service (refused, reset, timed out).
	// Every *ConnectionError matches it.
	ErrConnection = errors.New("agent: connection failed")
	// ErrTurnBudget: the turn made every model request its Budget allows.
	ErrTurnBudget = errors.New("agent: the turn's request budget is spent")
)

// APIError is an error status from a model service. Its text never holds the API key.
type APIError struct {
	Provider string // "anthropic" or "openai"
	// Status is the HTTP status; 200 for an error event inside a stream.
	Status int
	// Type is the service's error type, e.g. "rate_limit_error", "overloaded_error".
	Type string
	// Code is the machine-readable cause, when the service gave one: OpenAI's
	// "code" (e.g. "context_length_exceeded"), Anthropic's details.error_code.
	Code      string
	Message   string
	RequestID string
	// RetryAfter is how long the service asked to wait (retry-after-ms, else
	// retry-after in seconds or as an HTTP date); 0 when it did not say, or
	// said to retry now (RetryNow).
	RetryAfter time.Duration
	// RetryNow: the service named a wait of none (retry-after: 0, or a date
	// already past): the retry goes at once, not after a backoff.
	RetryNow bool
	// ShouldRetry is the x-should-retry header: nil when absent.
	ShouldRetry *bool
}

// Error names the provider, status, type and message.
func (e *APIError) Error() string {
	s := fmt.Sprintf("%s: %d", e.Provider, e.Status)
	for _, part := range []string{e.Type, e.Code} {
		if part != "" {
			s += " " + part
		}
	}
	if e.Message != "" {
		s += ": " + e.Message
	}
	return s
}

// Is reports whether e is a prompt-too-long error, so that errors.Is(err,
// ErrPromptTooLong) holds for it.
func (e *APIError) Is(target error) bool {
	return target == ErrPromptTooLong && promptTooLong(e)
}

// promptTooLong asks the provider that answered whether e says the request
// cannot go on in the same context: the prompt is over the context window.
func promptTooLong(e *APIError) bool {
	if e.Provider == providerAnthropic {
		return anthropicTooLong(e)
	}
	return openAITooLong(e)
}

// ConnectionError is a request that got no answer from the service: the connection
// was refused or dropped, or the per-request timeout fired. It matches ErrConnection.
type ConnectionError struct {
	Provider string
	// Detail is the cause's text, with the API key removed.
	Detail string
}

// Error names the provider and the cause.
func (e *ConnectionError) Error() string {
	return e.Provider + ": connection failed: " + e.Detail
}

// Is makes errors.Is(err, ErrConnection) hold.
func (e *ConnectionError) Is(target error) bool { return target == ErrConnection }

// transportError maps an error that is not an API error: the context's own error
// when ctx ended, a *ConnectionError when the request went out but no answer came,
// else a plain error (a request that could not be built). The key is removed.
func transportError(ctx context.Context, provider, key string, err error) error {
	if ctx.Err() != nil {
		return fmt.Errorf("%s: %w", provider, ctx.Err())
	}
	var ne net.Error
	if errors.As(err, &ne) || errors.Is(err, context.DeadlineExceeded) ||
		errors.Is(err, io.ErrUnexpectedEOF) || errors.Is(err, io.EOF) {
		return &ConnectionError{Provider: provider, Detail: redact(err.Error(), key)}
	}
	return fmt.Errorf("%s: %s", provider, redact(err.Error(), key))
}

// redact removes the key from s. An empty key (a local server) removes nothing.
func redact(s, key string) string {
	if key == "" {
		return s
	}
	return strings.ReplaceAll(s, key, "[redacted]")
}

// WaitAsked reads how long the service asked to wait: retry-after-ms
// (milliseconds, may be fractional), else retry-after (seconds, or an HTTP date
// measured from now). named is false when neither header is there or readable;
// a wait of 0 that was named means now. The SDK path reads it from an error's
// answer; the agent-CLI path from the answers its relay passes on.
func WaitAsked(h http.Header, now time.Time) (wait time.Duration, named bool) {
	if ms, err := strconv.ParseFloat(h.Get("retry-after-ms"), 64); err == nil && ms >= 0 {
		return time.Duration(ms * float64(time.Millisecond)), true
	}
	v := h.Get("retry-after")
	if s, err := strconv.ParseFloat(v, 64); err == nil && s >= 0 {
		return time.Duration(s * float64(time.Second)), true
	}
	if at, err := http.ParseTime(v); err == nil {
		return max(at.Sub(now), 0), true
	}
	return 0, false
}

// retryAfterOf fills e's RetryAfter and RetryNow from h.
func (e *APIError) retryAfterOf(h http.Header, now time.Time) *APIError {
	wait, named := WaitAsked(h, now)
	e.RetryAfter, e.RetryNow = wait, named && wait == 0
	return e
}

// shouldRetry reads x-should-retry: nil when absent or neither "true" nor "false".
func shouldRetry(h http.Header) *bool {
	switch strings.ToLower(strings.TrimSpace(h.Get("x-should-retry"))) {
	case "true":
		return new(true)
	case "false":
		return new(false)
	}
	return nil
}

// headerOf is the response's header, or none when the SDK error carries no response.
func headerOf(res *http.Response) http.Header {
	if res == nil {
		return http.Header{}
	}
	return res.Header
}

// RetryableStatus classifies an HTTP status a model service answered with, as
// Recovery retries it: 429 and 5xx but 501 are retryable, 503 and 529 are
// overloads too. An agent CLI that passes the status on is judged by the same
// table.
func RetryableStatus(status int) (retryable, overload bool) {
	if status == 529 || status == http.StatusServiceUnavailable {
		return true, true
	}
	return retryStatuses[status], false
}
