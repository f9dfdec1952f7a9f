// Package cli drives agent CLIs (Claude Code, Codex) as the brain behind the
// chat: an operator's plain text becomes a headless run of the CLI whose only
// tools are Countersign's, reached over MCP and bound to the chat's task, in a
// working folder of the chat's own, resuming the chat's session.
//
// One Coordinator decides every retry, as agent.Recovery does for the SDKs (the
// CLIs' own retries are off). A Provider knows one CLI: the command line of an
// attempt, and how to read the attempt's event stream and exit status. It
// answers only two questions: was the failure retryable (an overload or a rate
// limit the CLI reported, or a model request that got no answer: a connection
// refused, a stream dropped), and can the run continue in the same context (a
// session exists: the CLI reported its id). The schedule, budgets and fallback
// come from the task's policy snapshot, through agent.RetryPolicy; from the
// second attempt a resumed session gets ContinuationPrompt instead of the
// operator's text, so a tool that already returned is not called again. An
// attempt that ended before the CLI named its session ran nothing, and is asked
// again as it was; a session the CLI no longer has is forgotten, and the
// operator's text asked again at once in a new one.
package cli

import (
	"context"
	"time"
)

// ContinuationPrompt is what a retried attempt sends, in the session the
// interrupted attempt ran in, instead of the operator's text.
const ContinuationPrompt = "The previous attempt was interrupted; continue from where it stopped, do not repeat tool calls that already returned."

// causeConnection is the Cause of an attempt whose model request got no
// answer: no HTTP status, a connection refused or a stream dropped.
const causeConnection = "connection"

// Provider is one agent CLI. Its methods are called for each attempt, from the
// coordinator's goroutine; it keeps no state between attempts.
type Provider interface {
	// Name is the CLI as the policy names it (policy.ProviderClaudeCode, ...); it
	// also keys the chat's session in the journal.
	Name() string
	// Command is the process of attempt a. Files are written into a.Dir (0600)
	// before it starts and removed after it ends: configuration that holds the
	// run's bearer token goes there, never into the arguments; the prompt goes
	// on standard input.
	Command(a Attempt) (Command, error)
	// Reader reads one attempt's stdout.
	Reader() Reader
}

// Reader reads one attempt's stdout, line by line, and judges the attempt when
// its process has ended.
type Reader interface {
	// Line takes one line of stdout, without its newline. Lines that are not
	// the CLI's events are ignored.
	Line(line []byte)
	// Session is the id of the session the attempt runs in, once the CLI has
	// said it ("" before): the coordinator asks it after a stall too.
	Session() string
	// InTool reports whether a tool call is in flight (called, not yet
	// answered): the silence is the tool's (an await_outcome waiting for a
	// tap), not a stalled model's, and the stall watch lets it be.
	InTool() bool
	// End judges the attempt from the lines read and the process's exit code
	// (-1 when a signal ended it).
	End(exit int) Outcome
}

// Attempt is one run of the CLI, as the coordinator asks for it.
type Attempt struct {
	// N counts the attempts of one message, from 1.
	N int
	// Prompt is the operator's text on the first attempt, ContinuationPrompt on
	// a later one.
	Prompt string
	// Session is the session to resume; "" starts a new one.
	Session string
	// Model is the model to ask for; "" leaves the CLI's own. A later attempt
	// gets the policy's fallback after enough overloads in a row.
	Model string
	// Dir is the chat's working folder, which exists; the process runs there.
	Dir string
	// MaxTurns bounds the attempt's model turns where the CLI can count them
	// (the policy's model.steps); 0 leaves the CLI's own.
	MaxTurns int
	// Tools is Countersign's MCP server as this attempt reaches it.
	Tools Tools
	// Service is the base URL the CLI is to reach its model service at: the
	// attempt's relay (see relay), "" to leave the CLI's own.
	Service string
}

// relayed is a Provider whose CLI reaches its model service at a base URL the
// coordinator can set (Attempt.Service), so that a relay can stand in front of
// it and tell the wait a failed answer asked for.
type relayed interface {
	// service is the model service's base URL the CLI would use in env (the
	// coordinator's base environment), "" for none the relay can stand in
	// front of.
	service(env []string) string
	// countsTurns reports whether the CLI bounds its own model turns by
	// Attempt.MaxTurns (Claude Code's --max-turns); when it does not (Codex
	// has no such switch), the relay counts them.
	countsTurns() bool
}

// Tools is Countersign's MCP server for one run: an endpoint on loopback whose
// bearer token binds every call to the chat's task, and the tools the CLI may
// call.
type Tools struct {
	// Server is the name the CLI knows the server by: its tools are
	// mcp__<Server>__<name>.
	Server string
	URL    string
	// Token is the run's bearer token; it opens only this task, only while the
	// run lasts, and never appears in a log or an argument.
	Token string
	// Names are the tools the CLI may call: the policy's and the follow-up
	// tools, unprefixed.
	Names []string
}

// Command is a process to start for an attempt.
type Command struct {
	Path string
	Args []string
	// Env is added to the coordinator's base environment, KEY=VALUE each.
	Env []string
	// Files are written into the attempt's folder before the start, by name.
	Files map[string][]byte
	// Stdin is the process's standard input, closed after it: the prompt goes
	// there, never into Args, which any local user can read in
	// /proc/PID/cmdline for as long as the run lasts.
	Stdin []byte
}

// Outcome is an attempt as its provider judges it.
type Outcome struct {
	// OK is success as the CLI says it (Claude Code: exit 0 and is_error false,
	// whatever the result's subtype).
	OK bool
	// Text is the CLI's final text: its answer, or its error in one line.
	Text string
	// Session is the session the attempt ran in, "" when the CLI reported none.
	Session string
	// Retryable: the failure is one that waiting may cure (an overload or a rate
	// limit reported by the CLI, or a request that got no answer). Overload marks the overloads, which count
	// toward the fallback model.
	Retryable, Overload bool
	// Cause labels the failure in a Step: "529", "429", "exit 1", "stall".
	Cause string
	// RetryAfter is the wait the service asked for, when the CLI passed it on.
	RetryAfter time.Duration
}

// CanContinue reports whether a retry can go on in the same context: the
// session exists.
func (o Outcome) CanContinue() bool { return o.Session != "" }

// Gate opens Countersign's tools to the runs of one task.
type Gate interface {
	// Open returns the tools for a run in task, and a function that closes
	// them again (the token stops working).
	Open(ctx context.Context, taskID string) (Tools, func(), error)
}

// Sessions keeps each chat's session per provider, so that the next message
// resumes it.
type Sessions interface {
	// Session is the chat's session with provider, "" when it has none.
	Session(ctx context.Context, provider, chat string) (string, error)
	// SetSession records it; "" forgets it (/new).
	SetSession(ctx context.Context, provider, chat, session string) error
}
