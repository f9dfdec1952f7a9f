package agenttest

import (
	"encoding/json"
	"strings"
)

// ToolResult is a tool's answer that a client sends back to the model: the id of
// the call it answers, its text, and whether the client marked it an error.
type ToolResult struct {
	UseID   string
	Content string
	IsError bool
}

// LastResult is the last tool result in the request, the one that answers the
// previous reply's call; ok is false when the request carries none. A script
// reads it to take what the tool returned (an operation id) into its next call.
func (r Request) LastResult() (ToolResult, bool) {
	if len(r.Results) == 0 {
		return ToolResult{}, false
	}
	return r.Results[len(r.Results)-1], true
}

// wireMessage is a message of either API, as far as tool results go: Anthropic's
// tool_result blocks in a user message's content; OpenAI's messages of role "tool".
type wireMessage struct {
	Role       string          `json:"role"`
	Content    json.RawMessage `json:"content"`
	ToolCallID string          `json:"tool_call_id"`
}

func (m wireMessage) results() []ToolResult {
	if m.Role == "tool" {
		return []ToolResult{{UseID: m.ToolCallID, Content: contentText(m.Content)}}
	}
	var blocks []struct {
		Type      string          `json:"type"`
		ToolUseID string          `json:"tool_use_id"`
		Content   json.RawMessage `json:"content"`
		IsError   bool            `json:"is_error"`
	}
	if json.Unmarshal(m.Content, &blocks) != nil { // a string: no tool results
		return nil
	}
	var out []ToolResult
	for _, b := range blocks {
		if b.Type == "tool_result" {
			out = append(out, ToolResult{UseID: b.ToolUseID, Content: contentText(b.Content), IsError: b.IsError})
		}
	}
	return out
}

// contentText is content given as a string or as a list of parts, its text
// parts joined.
func contentText(content json.RawMessage) string {
	var s string
	if json.Unmarshal(content, &s) == nil {
		return s
	}
	var parts []struct{ Type, Text string }
	json.Unmarshal(content, &parts)
	var texts []string
	for _, p := range parts {
		if p.Type == "text" || p.Type == "input_text" || p.Type == "output_text" {
			texts = append(texts, p.Text)
		}
	}
	return strings.Join(texts, "\n")
}

// wireTool is a tool a request offers: Anthropic's {name}, OpenAI's
// {function: {name}}.
type wireTool struct {
	Name     string `json:"name"`
	Function struct {
		Name string `json:"name"`
	} `json:"function"`
}

func (t wireTool) name() string {
	if t.Name != "" {
		return t.Name
	}
	return t.Function.Name
}
