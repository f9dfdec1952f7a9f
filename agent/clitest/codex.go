package clitest

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
)

// Codex is the Codex CLI: the native binary of its platform package (the
// wrapper's bin/codex.js only finds and starts it), musl-linked, about 300 MB.
var Codex = Tool{Name: "Codex CLI", Package: "@openai/codex@0.169.0", Env: "COUNTERSIGN_CODEX",
	Paths:   []string{"@openai/codex-linux-x64/vendor/x86_64-unknown-linux-musl/bin/codex", "@openai/codex/bin/codex.js"},
	Command: "codex"}

// CodexProvider is the name of the model provider CodexHome configures, and
// CodexKeyEnv the variable its key is read from (sent as a bearer token).
const (
	CodexProvider = "agenttest"
	CodexKeyEnv   = "COUNTERSIGN_TEST_OPENAI_KEY"
)

// CodexMCP names an MCP server Codex starts over stdio: a command and its
// arguments.
type CodexMCP struct {
	Name    string
	Command string
	Args    []string
}

// CodexHome writes a fresh CODEX_HOME whose config.toml points Codex at the
// model test server at baseURL (the Responses API, the only wire Codex 0.169
// accepts), with its own retries off (request_max_retries and
// stream_max_retries 0: the coordinator decides), and with the MCP servers,
// each tool approved in advance (Codex exec fails a call that needs an approval
// it cannot ask for). It returns the folder; a run takes it as CODEX_HOME, and
// a resumed run takes the same one (the sessions live in it).
func CodexHome(t testing.TB, baseURL string, servers ...CodexMCP) string {
	t.Helper()
	home := t.TempDir()
	if err := os.WriteFile(filepath.Join(home, "config.toml"), []byte(CodexConfig(baseURL, servers...)), 0o600); err != nil {
		t.Fatal(err)
	}
	return home
}

// CodexConfig is CodexHome's config.toml.
func CodexConfig(baseURL string, servers ...CodexMCP) string {
	var b strings.Builder
	fmt.Fprintf(&b, "model = %q\nmodel_provider = %q\nweb_search = \"disabled\"\n\n", "agenttest-model", CodexProvider)
	fmt.Fprintf(&b, "[model_providers.%s]\nname = %q\nbase_url = %q\nwire_api = \"responses\"\nenv_key = %q\n",
		CodexProvider, "model test server", strings.TrimSuffix(baseURL, "/")+"/v1", CodexKeyEnv)
	b.WriteString("request_max_retries = 0\nstream_max_retries = 0\n")
	b.WriteString("\n[features]\nshell_tool = false\ngoals = false\nview_image = false\nimage_generation = false\n\n[agents]\nenabled = false\n")
	for _, s := range servers {
		args := make([]string, len(s.Args))
		for i, a := range s.Args {
			args[i] = strconv.Quote(a)
		}
		fmt.Fprintf(&b, "\n[mcp_servers.%s]\ncommand = %q\nargs = [%s]\ndefault_tools_approval_mode = \"approve\"\n",
			s.Name, s.Command, strings.Join(args, ", "))
	}
	return b.String()
}

// CodexEnv is what a Codex run needs beside its config: its CODEX_HOME and
// the test key.
func CodexEnv(codexHome string) []string {
	return []string{"CODEX_HOME=" + codexHome, CodexKeyEnv + "=" + TestAPIKey}
}

// CodexArgs are the arguments of a headless Codex run of prompt, its events as
// JSON lines, outside a git repository; with a thread id, the run resumes that
// thread.
func CodexArgs(thread, prompt string) []string {
	if thread != "" {
		return []string{"exec", "resume", "--json", "--skip-git-repo-check", thread, prompt}
	}
	return []string{"exec", "--json", "--skip-git-repo-check", prompt}
}

// CodexEvent is one line of `codex exec --json`: the fields a test reads, with
// the line itself in Raw. Codex says less than Claude Code: a failure is an
// "error" event and a "turn.failed" with a message, no status.
type CodexEvent struct {
	// Type is "thread.started", "turn.started", "item.started",
	// "item.updated", "item.completed", "turn.completed", "turn.failed" or
	// "error".
	Type string `json:"type"`
	// ThreadID is the session's id (thread.started), the one resume takes.
	ThreadID string `json:"thread_id"`
	// Item is the item of an item.* event.
	Item *CodexItem `json:"item"`
	// Error is turn.failed's error; Message is an error event's.
	Error   *CodexError `json:"error"`
	Message string      `json:"message"`
	// Usage is turn.completed's token count.
	Usage json.RawMessage `json:"usage"`

	Raw json.RawMessage `json:"-"`
}

// CodexItem is an item of a turn: "agent_message" (Text), "mcp_tool_call"
// (Server, Tool, Arguments, Result, Error, Status "in_progress", "completed"
// or "failed"), "error" (Message: a warning that does not end the turn), and
// others a test does not read.
type CodexItem struct {
	ID        string           `json:"id"`
	Type      string           `json:"type"`
	Text      string           `json:"text"`
	Message   string           `json:"message"`
	Server    string           `json:"server"`
	Tool      string           `json:"tool"`
	Arguments json.RawMessage  `json:"arguments"`
	Result    *CodexToolResult `json:"result"`
	Error     *CodexError      `json:"error"`
	Status    string           `json:"status"`
}

// CodexToolResult is an MCP tool's result as Codex received it.
type CodexToolResult struct {
	Content           []struct{ Type, Text string } `json:"content"`
	StructuredContent json.RawMessage               `json:"structured_content"`
}

// CodexError is the error of a failed turn or tool call.
type CodexError struct {
	Message string `json:"message"`
}

// ParseCodexEvent reads one line of `codex exec --json`.
func ParseCodexEvent(line []byte) (CodexEvent, error) {
	var ev CodexEvent
	if err := json.Unmarshal(line, &ev); err != nil {
		return CodexEvent{}, fmt.Errorf("clitest: a codex --json line: %w", err)
	}
	if ev.Type == "" {
		return CodexEvent{}, fmt.Errorf("clitest: a codex --json line without a type: %.80s", line)
	}
	ev.Raw = append(json.RawMessage(nil), line...)
	return ev, nil
}

// CodexRun is a Codex run's events, read from a Result.
type CodexRun struct {
	Result
	Events []CodexEvent
}

// Codex reads r's events as Codex's.
func (r Result) Codex() CodexRun {
	run := CodexRun{Result: r}
	for _, ev := range r.Events {
		if c, err := ParseCodexEvent(ev.Raw); err == nil {
			run.Events = append(run.Events, c)
		}
	}
	return run
}

// ThreadID is the thread the run said it started or resumed ("" when none).
func (r CodexRun) ThreadID() string {
	for _, ev := range r.Events {
		if ev.Type == "thread.started" {
			return ev.ThreadID
		}
	}
	return ""
}

// Failure is the error of the run's turn.failed (ok false when no turn failed).
func (r CodexRun) Failure() (CodexError, bool) {
	for _, ev := range r.Events {
		if ev.Type == "turn.failed" && ev.Error != nil {
			return *ev.Error, true
		}
	}
	return CodexError{}, false
}

// Succeeded reports whether the run succeeded as Codex says it: exit code 0,
// a turn completed and none failed.
func (r CodexRun) Succeeded() bool {
	_, failed := r.Failure()
	return r.Err == nil && r.ExitCode == 0 && !failed && slices.ContainsFunc(r.Events, func(ev CodexEvent) bool { return ev.Type == "turn.completed" })
}

// completed are the items of item.completed events of type typ, in order.
func (r CodexRun) completed(typ string) []CodexItem {
	var out []CodexItem
	for _, ev := range r.Events {
		if ev.Type == "item.completed" && ev.Item != nil && ev.Item.Type == typ {
			out = append(out, *ev.Item)
		}
	}
	return out
}

// ToolCalls are the MCP tool calls that ended, in order, with their results.
func (r CodexRun) ToolCalls() []CodexItem { return r.completed("mcp_tool_call") }

// Text is the run's last agent message ("" when there was none).
func (r CodexRun) Text() string {
	msgs := r.completed("agent_message")
	if len(msgs) == 0 {
		return ""
	}
	return msgs[len(msgs)-1].Text
}

// Summary is the run in a few lines for a failure message: exit code, the
// failed turn's error, stdout's and stderr's ends.
func (r CodexRun) Summary() string {
	var b strings.Builder
	fmt.Fprintf(&b, "exit %d", r.ExitCode)
	if r.Err != nil {
		fmt.Fprintf(&b, " (%v)", r.Err)
	}
	if f, ok := r.Failure(); ok {
		fmt.Fprintf(&b, "; turn failed: %s", f.Message)
	}
	fmt.Fprintf(&b, "; stdout:\n%s", tail(r.Stdout, 2000))
	if r.Stderr != "" {
		fmt.Fprintf(&b, "\nstderr:\n%s", tail(r.Stderr, 2000))
	}
	return b.String()
}
