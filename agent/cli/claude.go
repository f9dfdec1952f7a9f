package cli

import (
	"cmp"
	"encoding/json"
	"errors"
	"strconv"
	"strings"
	"time"

	"github.com/countersign/countersign/model"
	"github.com/countersign/countersign/policy"
)

// ClaudeCode is the Claude Code CLI as a provider: `claude -p` with stream-json
// output, no built-in tools (no shell, no files), Countersign's MCP server as its
// only server, and only that server's tools allowed.
type ClaudeCode struct {
	// Path is the claude binary ("claude": looked up on PATH).
	Path string
}

var _ Provider = ClaudeCode{}

// mcpConfigFile is the attempt's MCP configuration, written in its folder: it
// holds the run's bearer token, which must not appear in the process's
// arguments (any local user can read those).
const mcpConfigFile = ".countersign-mcp.json"

// Name implements Provider.
func (ClaudeCode) Name() string { return policy.ProviderClaudeCode }

// Command implements Provider. Its environment turns off the CLI's own retries
// (CLAUDE_CODE_MAX_RETRIES=0: the coordinator decides) and puts the MCP tools in
// the model's tool list rather than behind a tool search. The prompt is on
// standard input, out of the arguments any local user can read.
func (c ClaudeCode) Command(a Attempt) (Command, error) {
	if a.Prompt == "" {
		return Command{}, errors.New("an empty prompt")
	}
	config, err := json.Marshal(map[string]any{"mcpServers": map[string]any{a.Tools.Server: map[string]any{
		"type": "http", "url": a.Tools.URL, "headers": map[string]string{"Authorization": "Bearer " + a.Tools.Token}}}})
	if err != nil {
		return Command{}, err
	}
	allowed := make([]string, len(a.Tools.Names))
	for i, n := range a.Tools.Names {
		allowed[i] = "mcp__" + a.Tools.Server + "__" + n
	}
	args := []string{"-p", "--output-format", "stream-json", "--verbose",
		"--mcp-config", mcpConfigFile, "--strict-mcp-config",
		"--allowedTools", strings.Join(allowed, ","), "--tools", ""}
	if a.Session != "" {
		args = append(args, "--resume", a.Session)
	}
	if a.Model != "" {
		args = append(args, "--model", a.Model)
	}
	if a.MaxTurns > 0 {
		args = append(args, "--max-turns", strconv.Itoa(a.MaxTurns))
	}
	path := c.Path
	if path == "" {
		path = "claude"
	}
	env := []string{"CLAUDE_CODE_MAX_RETRIES=0", "CLAUDE_CODE_DISABLE_NONSTREAMING_FALLBACK=1", "ENABLE_TOOL_SEARCH=false"}
	if a.Service != "" {
		env = append(env, "ANTHROPIC_BASE_URL="+a.Service)
	}
	// The prompt on stdin, which -p reads when no prompt argument is given.
	return Command{Path: path, Args: args, Stdin: []byte(a.Prompt), Env: env,
		Files: map[string][]byte{mcpConfigFile: config}}, nil
}

// anthropicAPI is the Anthropic API's base URL, Claude Code's when its
// environment names no other.
const anthropicAPI = "https://api.anthropic.com"

// service implements relayed: ANTHROPIC_BASE_URL, or the Anthropic API; none
// when the CLI goes to Bedrock or Vertex, whose base URLs it takes elsewhere.
func (ClaudeCode) service(env []string) string {
	if envValue(env, "CLAUDE_CODE_USE_BEDROCK") != "" || envValue(env, "CLAUDE_CODE_USE_VERTEX") != "" {
		return ""
	}
	return cmp.Or(envValue(env, "ANTHROPIC_BASE_URL"), anthropicAPI)
}

// countsTurns implements relayed: --max-turns.
func (ClaudeCode) countsTurns() bool { return true }

// Reader implements Provider.
func (ClaudeCode) Reader() Reader { return &claudeReader{calls: map[string]bool{}} }

// claudeReader reads `--output-format stream-json --verbose`.
type claudeReader struct {
	session string
	calls   map[string]bool // tool_use ids without their result yet
	// status is the last API error status the stream reported (an api_retry,
	// the synthetic assistant message, the result).
	status int
	// delay is the wait the CLI reported for a retry of its own
	// (system/api_retry's retry_delay_ms, which follows Retry-After).
	delay time.Duration
	// kind is the synthetic assistant message's error ("server_error",
	// "rate_limit", "authentication_failed", "unknown", ...).
	kind   string
	result *claudeEvent
}

// claudeEvent is the part of a stream-json line the provider reads.
type claudeEvent struct {
	Type           string `json:"type"`
	Subtype        string `json:"subtype"`
	SessionID      string `json:"session_id"`
	ErrorStatus    int    `json:"error_status"`     // system/api_retry
	RetryDelayMS   int64  `json:"retry_delay_ms"`   // system/api_retry
	APIErrorStatus int    `json:"api_error_status"` // the synthetic assistant message, the result
	Error          string `json:"error"`            // the synthetic assistant message: "server_error", "rate_limit", ...
	Message        *struct {
		Content json.RawMessage `json:"content"`
	} `json:"message"`
	IsError        bool     `json:"is_error"`
	TerminalReason string   `json:"terminal_reason"` // the result: "completed", "api_error", ...
	Result         string   `json:"result"`
	Errors         []string `json:"errors"`
}

// block is a content block: a tool call or its result is all the reader needs.
type block struct {
	Type      string `json:"type"`
	ID        string `json:"id"`
	ToolUseID string `json:"tool_use_id"`
}

func (r *claudeReader) Line(line []byte) {
	var ev claudeEvent
	if json.Unmarshal(line, &ev) != nil {
		return
	}
	switch {
	case ev.Type == "system" && ev.Subtype == "init":
		r.session = ev.SessionID
	case ev.Type == "system" && ev.Subtype == "api_retry":
		r.status = ev.ErrorStatus
		r.delay = time.Duration(ev.RetryDelayMS) * time.Millisecond
	case ev.Type == "assistant" || ev.Type == "user":
		if ev.APIErrorStatus != 0 {
			r.status = ev.APIErrorStatus
		}
		if ev.Error != "" {
			r.kind = ev.Error
		}
		r.track(ev)
	case ev.Type == "result":
		if ev.APIErrorStatus != 0 {
			r.status = ev.APIErrorStatus
		}
		r.result = &ev
	}
}

// track keeps the tool calls in flight: an assistant's tool_use opens one, the
// user's tool_result with its id closes it.
func (r *claudeReader) track(ev claudeEvent) {
	if ev.Message == nil {
		return
	}
	var blocks []block
	if json.Unmarshal(ev.Message.Content, &blocks) != nil {
		return // a prompt given as a string
	}
	for _, b := range blocks {
		switch b.Type {
		case "tool_use":
			r.calls[b.ID] = true
		case "tool_result":
			delete(r.calls, b.ToolUseID)
		}
	}
}

func (r *claudeReader) Session() string { return r.session }

func (r *claudeReader) InTool() bool { return len(r.calls) > 0 }

// End implements Reader: success is exit 0 and a result with is_error false,
// whatever its subtype says; a failure is retryable when the CLI reported an
// overload or a rate limit (or another status the SDKs retry), or an API
// error with no status at all: the request got no answer (a connection
// refused or dropped), which the SDKs retry too.
func (r *claudeReader) End(exit int) Outcome {
	out := Outcome{Session: r.session}
	if r.result != nil {
		out.Text = r.result.Result
		if out.Text == "" {
			out.Text = strings.Join(r.result.Errors, "; ")
		}
	}
	if exit == 0 && r.result != nil && !r.result.IsError {
		out.OK = true
		return out
	}
	out.Retryable, out.Overload = model.RetryableStatus(r.status)
	out.RetryAfter = r.delay
	switch {
	case r.noAnswer():
		out.Retryable, out.Cause = true, causeConnection
	case r.status != 0:
		out.Cause = strconv.Itoa(r.status)
	default:
		out.Cause = "exit " + strconv.Itoa(exit)
	}
	return out
}

// noAnswer reports an API error that came with no HTTP status and no kind
// that a status would have given (authentication, billing, a bad request):
// the CLI's request got no answer.
func (r *claudeReader) noAnswer() bool {
	if r.status != 0 || r.result == nil || r.result.TerminalReason != "api_error" {
		return false
	}
	return r.kind == "" || r.kind == "unknown" || r.kind == "server_error"
}
