// Package model is the model layer: providers that make exactly one request to a
// language model (Anthropic or any OpenAI-compatible server), the recovery that
// wraps those requests (retry, fallback model, raised output limit, typed stops),
// and the stream watch. It imports nothing of the project's but policy, so that
// nothing here can reach a tool (TestTheModelLayerCannotReachATool); the agent
// loop and the verifier's reviewer, which do, are package agent.
//
// Recovery wraps the model request only, never a tool: a retried request never runs
// a tool twice. Every error a provider returns is an *APIError, a *ConnectionError or
// a plain error for a request that could not be built; none of them holds an API key.
package model

import (
	"context"
	"encoding/json"
)

// Provider is one language model service.
type Provider interface {
	// Complete makes exactly one request (the SDK's own retries are off) and returns
	// the model's reply. It returns an *APIError when the service answered with an
	// error status, a *ConnectionError when no answer arrived, and the context's error
	// when ctx ended first.
	Complete(ctx context.Context, req Request) (Response, error)
}

// Request is one request to a model.
type Request struct {
	Model     string
	System    string
	Messages  []Message
	Tools     []ToolSpec
	MaxTokens int
	// Background marks a request nobody is waiting for: Recovery gives it up on
	// overload (529, 503, overloaded_error) instead of retrying. Providers ignore it.
	Background bool
	// Continues marks a request that asks the model to go on with a reply cut at
	// the output limit: the limit was raised already, so Recovery does not raise it
	// again. Providers ignore it.
	Continues bool
	// Retry, when set, is the recovery this request travels with (the task's
	// policy snapshot); nil takes the Recovery's own. Providers ignore it.
	Retry *Policy
	// Budget, when set, is the turn's: its requests and waits are shared by every
	// request of the turn, and a fallback chosen once serves the rest of it. Nil:
	// this request alone, within Retry's attempts and wait. Providers ignore it.
	Budget *Budget
}

// The roles of a Message.
const (
	RoleUser      = "user"
	RoleAssistant = "assistant"
	// RoleTool carries ToolResults (and, optionally, Text the user adds after them).
	RoleTool = "tool"
)

// Message is one turn of the conversation. An assistant message may carry the tool
// calls the model made; a tool message carries their results.
type Message struct {
	Role        string
	Text        string
	ToolCalls   []ToolCall
	ToolResults []ToolResult
}

// ToolCall is the model asking for a tool, with its arguments as a JSON object.
type ToolCall struct {
	ID    string
	Name  string
	Input json.RawMessage
}

// ToolResult answers the ToolCall with the same ID.
type ToolResult struct {
	CallID  string
	Content string
	IsError bool
}

// ToolSpec offers a tool to the model: its name, what it does, and the JSON Schema
// properties and required names of its input object.
type ToolSpec struct {
	Name        string
	Description string
	Properties  map[string]any
	Required    []string
}

// StopReason says why the model stopped, in Anthropic's words; the OpenAI provider
// translates its finish reasons into them. Unknown values pass through unchanged.
type StopReason string

// The stop reasons the model layer acts on.
const (
	StopEndTurn   StopReason = "end_turn"
	StopToolUse   StopReason = "tool_use"
	StopMaxTokens StopReason = "max_tokens"
	StopRefusal   StopReason = "refusal"
)

// Response is the model's reply: its text, the tools it called, why it stopped and
// the model that answered.
type Response struct {
	Text      string
	ToolCalls []ToolCall
	Stop      StopReason
	Model     string
	// MaxTokens is the output limit the reply was made under: the request's,
	// or the one Recovery raised it to after a cut reply (0 from a bare
	// provider).
	MaxTokens int
}
