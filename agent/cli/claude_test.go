package cli_test

import (
	"bufio"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/countersign/countersign/agent/cli"
)

// read feeds a recorded stream to a fresh reader of p, recording after each
// line whether a tool call was in flight.
func read(t *testing.T, p cli.Provider, name string) (cli.Reader, []bool) {
	t.Helper()
	f, err := os.Open(filepath.Join("testdata", name))
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	r := p.Reader()
	var inTool []bool
	s := bufio.NewScanner(f)
	s.Buffer(nil, 1<<20)
	for s.Scan() {
		r.Line(s.Bytes())
		inTool = append(inTool, r.InTool())
	}
	return r, inTool
}

// The provider's two answers from recorded streams: success is exit 0 and
// is_error false (a 529's result says subtype "success" but is_error true);
// overloads and rate limits, however the CLI reports them (the result's
// api_error_status, the synthetic assistant message, a system/api_retry), are
// retryable; an auth error is not; a session exists once init named it, and a
// resume that found none has none.
func TestClaudeCodeReadsItsStream(t *testing.T) {
	t.Parallel()
	tests := []struct {
		file                string
		exit                int
		ok, retry, overload bool
		session             bool
		cause, text         string
	}{
		{"ok.jsonl", 0, true, false, false, true, "", "all done"},
		{"ok.jsonl", 1, false, false, false, true, "exit 1", "all done"},
		{"tooluse.jsonl", 0, true, false, false, true, "", "done after the tool"},
		{"overload.jsonl", 1, false, true, true, true, "529", "API Error: 529 Overloaded"},
		{"midstream.jsonl", 1, false, true, true, true, "529", "API Error: 529 Overloaded"},
		{"ratelimit.jsonl", 1, false, true, false, true, "429", "API Error: Request rejected (429)"},
		{"apiretry.jsonl", 1, false, true, true, true, "529", "API Error"},
		{"auth.jsonl", 1, false, false, false, true, "401", "Invalid API key"},
		// No HTTP status: the request got no answer (a dropped connection),
		// which waiting may cure, with the CLI's own retries off.
		{"connection.jsonl", 1, false, true, false, true, "connection", "API Error: Connection error."},
		{"noresume.jsonl", 1, false, false, false, false, "exit 1", ""},
		{"killed_after_retry.jsonl", -1, false, true, true, true, "529", ""},
		{"killed_after_init.jsonl", -1, false, false, false, true, "exit -1", ""},
	}
	for _, tt := range tests {
		t.Run(strings.TrimSuffix(tt.file, ".jsonl"), func(t *testing.T) {
			r, _ := read(t, cli.ClaudeCode{}, tt.file)
			got := r.End(tt.exit)
			if got.OK != tt.ok || got.Retryable != tt.retry || got.Overload != tt.overload || got.CanContinue() != tt.session || got.Cause != tt.cause {
				t.Errorf("exit %d: %+v; want ok %v, retryable %v, overload %v, can continue %v, cause %q",
					tt.exit, got, tt.ok, tt.retry, tt.overload, tt.session, tt.cause)
			}
			if !strings.HasPrefix(got.Text, tt.text) || (tt.text == "" && got.Text != "" && tt.file != "noresume.jsonl") {
				t.Errorf("text %q, want it to start %q", got.Text, tt.text)
			}
			if got.Session != r.Session() {
				t.Errorf("outcome's session %q, reader's %q", got.Session, r.Session())
			}
		})
	}
}

// A tool call is in flight from the assistant's tool_use to the user's
// tool_result, and only then: the stall watch lets a waiting tool be.
func TestClaudeCodeKnowsWhenAToolRuns(t *testing.T) {
	t.Parallel()
	_, inTool := read(t, cli.ClaudeCode{}, "tooluse.jsonl")
	if want := []bool{false, true, false, false, false}; !slices.Equal(inTool, want) {
		t.Errorf("in a tool after each line: %v, want %v", inTool, want)
	}
}

// An attempt's command: headless, stream-json, Countersign's server only (its
// token in the config file, not the arguments), its tools allowed by name, no
// built-in tools, the CLI's retries off; a resume and a model when asked; the
// prompt on standard input, never in the arguments (any local user reads those
// in /proc/PID/cmdline while the run lasts).
func TestClaudeCodeCommand(t *testing.T) {
	t.Parallel()
	a := cli.Attempt{N: 2, Prompt: "-rf everything", Session: "s-1", Model: "claude-fallback", Dir: t.TempDir(), MaxTurns: 8,
		Tools: cli.Tools{Server: "countersign", URL: "http://127.0.0.1:1/mcp", Token: "secret-token", Names: []string{"commit_send_message", "await_outcome"}}}
	c, err := cli.ClaudeCode{Path: "/bin/claude"}.Command(a)
	if err != nil {
		t.Fatal(err)
	}
	args := strings.Join(c.Args, " ")
	for _, want := range []string{"-p --output-format stream-json --verbose", "--strict-mcp-config",
		"--allowedTools mcp__countersign__commit_send_message,mcp__countersign__await_outcome", "--tools  ",
		"--resume s-1", "--model claude-fallback", "--max-turns 8"} {
		if !strings.Contains(args, want) {
			t.Errorf("args %q lack %q", args, want)
		}
	}
	if strings.Contains(args, "secret-token") || strings.Contains(args, "everything") {
		t.Errorf("args %q: want neither the token nor the prompt", args)
	}
	if got, want := string(c.Stdin), a.Prompt; got != want {
		t.Errorf("stdin %q, want the prompt %q", got, want)
	}
	for _, want := range []string{"CLAUDE_CODE_MAX_RETRIES=0", "ENABLE_TOOL_SEARCH=false"} {
		if !slices.Contains(c.Env, want) {
			t.Errorf("env %v lacks %s", c.Env, want)
		}
	}
	var config string
	for name, data := range c.Files {
		if strings.Contains(args, "--mcp-config "+name) {
			config = string(data)
		}
	}
	if !strings.Contains(config, `"Authorization":"Bearer secret-token"`) || !strings.Contains(config, `"url":"http://127.0.0.1:1/mcp"`) {
		t.Errorf("the MCP config %q does not name the server with its token", config)
	}
	if _, err := (cli.ClaudeCode{}).Command(cli.Attempt{}); err == nil {
		t.Error("an empty prompt: no error")
	}
}

// The wait the CLI reported for a retry of its own (system/api_retry's
// retry_delay_ms, which follows the service's Retry-After) reaches the
// coordinator when the attempt fails after it. With its retries off, as the
// bot runs it, the CLI says nothing of the wait (ratelimit.jsonl, recorded
// against a 429 asking 16 s): the attempt's relay reads it (relay_test.go, and
// cmd/bot's TestAgentCLIRateLimitWaitsWhatTheServiceAsked).
func TestClaudeCodePassesOnTheWaitItWasAsked(t *testing.T) {
	t.Parallel()
	for file, want := range map[string]time.Duration{"apiretry.jsonl": 590 * time.Millisecond,
		"killed_after_retry.jsonl": 590 * time.Millisecond, "overload.jsonl": 0, "ratelimit.jsonl": 0} {
		r, _ := read(t, cli.ClaudeCode{}, file)
		if got := r.End(1).RetryAfter; got != want {
			t.Errorf("%s: retry after %s, want %s", file, got, want)
		}
	}
}
