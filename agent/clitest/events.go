package clitest

import (
	"encoding/json"
	"fmt"
	"strings"
)

// Event is one line of Claude Code's `--output-format stream-json --verbose`:
// the fields a test reads, for every type (system init and api_retry,
// assistant and user messages, the final result), with the line itself in Raw.
type Event struct {
	// Type is "system", "assistant", "user" or "result"; Subtype the kind of
	// a system event ("init", "api_retry", "permission_denied", ...) or of a
	// result ("success", "error_max_turns", ...).
	Type      string `json:"type"`
	Subtype   string `json:"subtype"`
	SessionID string `json:"session_id"`

	// system/init: the tools the model is offered and the MCP servers' states.
	Tools      []string    `json:"tools"`
	MCPServers []MCPServer `json:"mcp_servers"`
	Model      string      `json:"model"`

	// system/api_retry
	Attempt     int `json:"attempt"`
	ErrorStatus int `json:"error_status"`

	// assistant and user: one message, one content block per event.
	Message *Message `json:"message"`
	// user, after a tool ran: the tool's result as the CLI received it (for an
	// MCP tool: content and structuredContent).
	ToolUseResult json.RawMessage `json:"tool_use_result"`

	// result. Success is IsError false and exit code 0, whatever Subtype says:
	// a run that failed on the API reports subtype "success" with is_error true.
	IsError           bool              `json:"is_error"`
	Result            string            `json:"result"`
	NumTurns          int               `json:"num_turns"`
	TerminalReason    string            `json:"terminal_reason"`
	APIErrorStatus    int               `json:"api_error_status"`
	Errors            []string          `json:"errors"`
	PermissionDenials []json.RawMessage `json:"permission_denials"`

	Raw json.RawMessage `json:"-"`
}

// MCPServer is an MCP server as the init event reports it.
type MCPServer struct {
	Name   string `json:"name"`
	Status string `json:"status"` // "connected", "failed", ...
}

// Message is an assistant or user message inside an event.
type Message struct {
	Role    string  `json:"role"`
	Model   string  `json:"model"`
	Content []Block `json:"content"`
}

// UnmarshalJSON reads content given as a plain string (a prompt) as one text
// block.
func (m *Message) UnmarshalJSON(b []byte) error {
	var raw struct {
		Role    string          `json:"role"`
		Model   string          `json:"model"`
		Content json.RawMessage `json:"content"`
	}
	if err := json.Unmarshal(b, &raw); err != nil {
		return err
	}
	m.Role, m.Model, m.Content = raw.Role, raw.Model, nil
	var text string
	switch {
	case len(raw.Content) == 0 || string(raw.Content) == "null":
	case json.Unmarshal(raw.Content, &text) == nil:
		m.Content = []Block{{Type: "text", Text: text}}
	default:
		if err := json.Unmarshal(raw.Content, &m.Content); err != nil {
			return fmt.Errorf("message content: %w", err)
		}
	}
	return nil
}

// Block is one content block: text, a tool call or a tool's result.
type Block struct {
	Type string `json:"type"` // "text", "tool_use", "tool_result", "thinking"
	Text string `json:"text"`
	// tool_use
	ID    string          `json:"id"`
	Name  string          `json:"name"`
	Input json.RawMessage `json:"input"`
	// tool_result: Content is a string or a list of text blocks.
	ToolUseID string          `json:"tool_use_id"`
	Content   json.RawMessage `json:"content"`
	IsError   bool            `json:"is_error"`
}

// ParseEvent reads one stream-json line.
func ParseEvent(line []byte) (Event, error) {
	var ev Event
	if err := json.Unmarshal(line, &ev); err != nil {
		return Event{}, fmt.Errorf("clitest: a stream-json line: %w", err)
	}
	if ev.Type == "" {
		return Event{}, fmt.Errorf("clitest: a stream-json line without a type: %.80s", line)
	}
	ev.Raw = append(json.RawMessage(nil), line...)
	return ev, nil
}

// ResultText is a tool_result's content as text: the string, or its text
// blocks joined.
func (b Block) ResultText() string {
	var s string
	if json.Unmarshal(b.Content, &s) == nil {
		return s
	}
	var parts []struct{ Type, Text string }
	json.Unmarshal(b.Content, &parts)
	var texts []string
	for _, p := range parts {
		if p.Type == "text" {
			texts = append(texts, p.Text)
		}
	}
	return strings.Join(texts, "\n")
}

// blocks returns the content blocks of type typ in the events, in order.
func blocks(events []Event, typ string) []Block {
	var out []Block
	for _, ev := range events {
		if ev.Message == nil {
			continue
		}
		for _, b := range ev.Message.Content {
			if b.Type == typ {
				out = append(out, b)
			}
		}
	}
	return out
}

// ToolUses are the tool calls the model made, in order.
func (r Result) ToolUses() []Block { return blocks(r.Events, "tool_use") }

// ToolResults are the results the CLI sent back for them, in order.
func (r Result) ToolResults() []Block { return blocks(r.Events, "tool_result") }

// Init is the first system/init event (ok false when there was none).
func (r Result) Init() (Event, bool) {
	for _, ev := range r.Events {
		if ev.Type == "system" && ev.Subtype == "init" {
			return ev, true
		}
	}
	return Event{}, false
}

// Final is the last result event (ok false when the run ended without one).
func (r Result) Final() (Event, bool) {
	for i := len(r.Events) - 1; i >= 0; i-- {
		if r.Events[i].Type == "result" {
			return r.Events[i], true
		}
	}
	return Event{}, false
}

// Succeeded reports whether the run succeeded as the CLI says it: exit code 0
// and a final result with is_error false. The result's subtype does not count.
func (r Result) Succeeded() bool {
	final, ok := r.Final()
	return r.Err == nil && r.ExitCode == 0 && ok && !final.IsError
}

// Summary is the run in a few lines for a failure message: exit code, the final
// result, stderr's end.
func (r Result) Summary() string {
	var b strings.Builder
	fmt.Fprintf(&b, "exit %d", r.ExitCode)
	if r.Err != nil {
		fmt.Fprintf(&b, " (%v)", r.Err)
	}
	if final, ok := r.Final(); ok {
		fmt.Fprintf(&b, "; result %s", final.Raw)
	} else {
		fmt.Fprintf(&b, "; no result event; stdout:\n%s", tail(r.Stdout, 2000))
	}
	if r.Stderr != "" {
		fmt.Fprintf(&b, "\nstderr:\n%s", tail(r.Stderr, 2000))
	}
	return b.String()
}

func tail(s string, n int) string {
	if len(s) > n {
		return "…" + s[len(s)-n:]
	}
	return s
}
