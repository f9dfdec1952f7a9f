package cli

import (
	"bufio"
	"bytes"
	"cmp"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"

	"github.com/countersign/countersign/model"
	"github.com/countersign/countersign/policy"
)

// Codex is the Codex CLI as a provider: `codex exec --json`, read-only, with
// none of its own tools (no shell, no patches, no images, no web, no
// sub-agents, no tool search; see codexCatalogFile), Countersign's MCP server as
// its only server, its tools approved in advance (exec has nobody to ask), and
// the session resumed with `codex exec resume`.
//
// Codex reports a failure on its --json stream by message only ("Selected model
// is at capacity..."); the kind of failure, typed, is in the session's record
// (CODEX_HOME/sessions/…/rollout-…-<thread>.jsonl, the task_complete event's
// codex_error_info). The reader takes it from there, never from the message.
type Codex struct {
	// Path is the codex binary ("codex": looked up on PATH).
	Path string
	// Home is the CODEX_HOME the runs use and keep their sessions in; ""
	// leaves the CLI's own (~/.codex), with its login, skills and memory.
	Home string
	// ModelProvider, when set, is the model service the runs use, defined for
	// them with its retries off (request_max_retries and stream_max_retries 0:
	// the coordinator decides). nil leaves Codex's built-in provider "openai",
	// with the login in Home; Codex refuses to change a built-in provider, so
	// its own retries stay on.
	ModelProvider *CodexModelProvider
}

// CodexModelProvider is a model service that speaks the Responses API (the
// only wire Codex 0.169 accepts).
type CodexModelProvider struct {
	// ID names it in Codex's config ("openai" is taken); BaseURL is where
	// Codex appends /responses; EnvKey the variable that holds its key, sent
	// as a bearer token.
	ID, BaseURL, EnvKey string
	// Model is the model to ask for when the policy names none.
	Model string
}

var _ Provider = Codex{}

// codexTokenEnv carries the run's bearer token to Codex, which reads it by
// name (bearer_token_env_var): the token is in no argument and no file. It is
// not the bot's COUNTERSIGN_MCP_TOKEN, which never reaches a CLI.
const codexTokenEnv = "COUNTERSIGN_RUN_TOKEN"

// codexOwnTools are the features that give the model tools of its own on the
// host; each is turned off.
var codexOwnTools = []string{"shell_tool", "goals", "view_image", "image_generation", "sleep_tool"}

// codexCatalogFile is the model catalog the runs read (model_catalog_json), in
// place of the one built into Codex. The built-in catalog gives the models it
// knows (gpt-5.5, ...) tools that no feature switch turns off: apply_patch,
// which reads host files to patch them, so that its answers tell whether a file
// exists and what it holds even under the read-only sandbox, and a tool search
// that hides Countersign's tools behind it. This catalog names only a hidden
// placeholder, so every model runs on Codex's fallback metadata: a generic
// context window and instructions, and the tools it is given, Countersign's.
const codexCatalogFile = ".countersign-codex-models.json"

// codexCatalog is its content: Codex needs at least one model.
var codexCatalog = []byte(`{"models":[{"slug":"countersign-placeholder","display_name":"placeholder","visibility":"hide",` +
	`"supported_in_api":false,"priority":0,"shell_type":"disabled","supported_reasoning_levels":[],"support_verbosity":false,` +
	`"truncation_policy":{"mode":"tokens","limit":10000},"experimental_supported_tools":[],"base_instructions":""}]}`)

// Name implements Provider.
func (Codex) Name() string { return policy.ProviderCodex }

// Command implements Provider. Home's config.toml is not read
// (--ignore-user-config, Codex's counterpart of Claude Code's
// --strict-mcp-config: no MCP server of the user's comes along; the login,
// the sessions, skills and memories in Home still do); everything the run
// needs is set by -c overrides.
func (c Codex) Command(a Attempt) (Command, error) {
	if a.Prompt == "" {
		return Command{}, errors.New("an empty prompt")
	}
	server, err := codexServer(a.Tools)
	if err != nil {
		return Command{}, err
	}
	args := []string{"exec"}
	if a.Session != "" {
		args = append(args, "resume")
	}
	dir, err := filepath.Abs(a.Dir) // Codex runs there; the path must not depend on it
	if err != nil {
		return Command{}, err
	}
	args = append(args, "--json", "--skip-git-repo-check", "--ignore-user-config", "-c", "mcp_servers="+server,
		"-c", `web_search="disabled"`, "-c", "agents.enabled=false", "-c", `sandbox_mode="read-only"`,
		"-c", "model_catalog_json="+strconv.Quote(filepath.Join(dir, codexCatalogFile)))
	for _, f := range codexOwnTools {
		args = append(args, "-c", "features."+f+"=false")
	}
	if p := c.ModelProvider; p != nil {
		if !tomlKey(p.ID) || p.ID == "openai" {
			return Command{}, fmt.Errorf("a model provider id that Codex cannot take: %q", p.ID)
		}
		args = append(args, "-c", "model_provider="+strconv.Quote(p.ID), "-c", fmt.Sprintf(
			"model_providers.%s={name=%q, base_url=%q, env_key=%q, wire_api=\"responses\", request_max_retries=0, stream_max_retries=0}",
			p.ID, p.ID, cmp.Or(a.Service, p.BaseURL), p.EnvKey))
	}
	if m := cmp.Or(a.Model, c.providerModel()); m != "" {
		args = append(args, "-m", m)
	}
	if a.Session != "" {
		args = append(args, a.Session)
	}
	env := []string{codexTokenEnv + "=" + a.Tools.Token}
	if c.Home != "" {
		env = append(env, "CODEX_HOME="+c.Home)
	}
	// The prompt "-": read from stdin, out of the arguments any local user can
	// read.
	return Command{Path: cmp.Or(c.Path, "codex"), Args: append(args, "-"), Env: env, Stdin: []byte(a.Prompt),
		Files: map[string][]byte{codexCatalogFile: codexCatalog}}, nil
}

// service implements relayed: the model provider's base URL, where one is
// set; Codex's built-in provider keeps its own retries, and no relay.
func (c Codex) service([]string) string {
	if c.ModelProvider == nil {
		return ""
	}
	return c.ModelProvider.BaseURL
}

// countsTurns implements relayed: Codex has no switch that bounds its turns,
// so the relay counts them.
func (Codex) countsTurns() bool { return false }

// codexServer is the inline TOML table of Countersign's MCP server, the only
// one: over HTTP, the token read from codexTokenEnv, only the allowed tools,
// each approved in advance.
func codexServer(t Tools) (string, error) {
	if !tomlKey(t.Server) {
		return "", fmt.Errorf("an MCP server name that is not a plain TOML key: %q", t.Server)
	}
	tools := make([]string, len(t.Names))
	for i, n := range t.Names {
		tools[i] = strconv.Quote(n)
	}
	return fmt.Sprintf(`{%s={url=%s, bearer_token_env_var=%q, default_tools_approval_mode="approve", enabled_tools=[%s]}}`,
		t.Server, strconv.Quote(t.URL), codexTokenEnv, strings.Join(tools, ", ")), nil
}

// tomlKey reports whether s is a bare TOML key.
func tomlKey(s string) bool {
	return s != "" && strings.Trim(s, "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789_-") == ""
}

func (c Codex) providerModel() string {
	if c.ModelProvider == nil {
		return ""
	}
	return c.ModelProvider.Model
}

// Reader implements Provider.
func (c Codex) Reader() Reader {
	return &codexReader{home: c.home(), calls: map[string]bool{}, ownRetries: c.ModelProvider == nil}
}

// home is where the runs' sessions are: Home, else the CLI's default.
func (c Codex) home() string {
	if c.Home != "" {
		return c.Home
	}
	if h := os.Getenv("CODEX_HOME"); h != "" {
		return h
	}
	dir, _ := os.UserHomeDir()
	return filepath.Join(dir, ".codex")
}

// codexReader reads `codex exec --json`.
type codexReader struct {
	home      string
	thread    string
	calls     map[string]bool // mcp_tool_call items started, not yet completed
	text      string          // the last agent message
	completed bool            // a turn completed
	failed    string          // turn.failed's message; else the last error event's
	turnFail  bool
	// ownRetries: Codex's built-in provider, whose retries stay on; what it
	// retried is not the bot's to retry again.
	ownRetries bool
}

// codexEvent is the part of a --json line the provider reads.
type codexEvent struct {
	Type     string `json:"type"`
	ThreadID string `json:"thread_id"`
	Message  string `json:"message"`
	Error    *struct {
		Message string `json:"message"`
	} `json:"error"`
	Item *struct {
		ID, Type, Text string
	} `json:"item"`
}

func (r *codexReader) Line(line []byte) {
	var ev codexEvent
	if json.Unmarshal(line, &ev) != nil {
		return
	}
	switch ev.Type {
	case "thread.started":
		r.thread = ev.ThreadID
	case "item.started":
		if ev.Item != nil && ev.Item.Type == "mcp_tool_call" {
			r.calls[ev.Item.ID] = true
		}
	case "item.completed":
		if ev.Item == nil {
			return
		}
		delete(r.calls, ev.Item.ID)
		if ev.Item.Type == "agent_message" {
			r.text = ev.Item.Text
		}
	case "turn.completed":
		r.completed = true
	case "turn.failed":
		r.turnFail = true
		if ev.Error != nil {
			r.failed = ev.Error.Message
		}
	case "error":
		if !r.turnFail {
			r.failed = ev.Message
		}
	}
}

func (r *codexReader) Session() string { return r.thread }

func (r *codexReader) InTool() bool { return len(r.calls) > 0 }

// End implements Reader: success is exit 0, a completed turn and no failed
// one; a failure is retryable when the session's record says the service was
// overloaded or rate-limited (or answered a status the SDKs retry).
func (r *codexReader) End(exit int) Outcome {
	out := Outcome{Session: r.thread}
	if exit == 0 && r.completed && !r.turnFail {
		out.OK, out.Text = true, r.text
		return out
	}
	out.Text = r.failed
	info := codexFailure(r.home, r.thread)
	if (info.name == "" || info.name == "other") && strings.HasPrefix(r.failed, codexStreamBroke) {
		// Codex 0.169 types a stream that broke or ended early as "other"
		// with its retries off (testdata/codex-dropped.jsonl, codex-cut.jsonl);
		// its message is the one sign left that no answer came whole.
		info = codexErrorInfo{name: "response_stream_disconnected"}
	}
	out.Retryable, out.Overload = info.retryable()
	if r.ownRetries && !out.Overload {
		// Codex retried it already by its own schedule: the bot's retries on
		// top would multiply the requests. An overload stays the bot's, for
		// its fallback model (Codex says to try another).
		out.Retryable = false
	}
	out.Cause = info.cause()
	if out.Cause == "" {
		out.Cause = "exit " + strconv.Itoa(exit)
	}
	return out
}

// codexErrorInfo is a failure as Codex types it: a name ("server_overloaded",
// "rate_limit_exceeded", "internal_server_error", "context_window_exceeded",
// "usage_limit_exceeded", "other", ...), or a name with the HTTP status
// ("response_too_many_failed_attempts", "http_connection_failed",
// "response_stream_disconnected", ... with http_status_code).
type codexErrorInfo struct {
	name   string
	status int
}

// UnmarshalJSON reads either form: "name", or {"name": {"http_status_code": N}}.
func (e *codexErrorInfo) UnmarshalJSON(b []byte) error {
	if json.Unmarshal(b, &e.name) == nil {
		return nil
	}
	var m map[string]struct {
		Status int `json:"http_status_code"`
	}
	if err := json.Unmarshal(b, &m); err != nil {
		return err
	}
	for name, v := range m {
		e.name, e.status = name, v.Status
	}
	return nil
}

// codexStreamBroke begins Codex's message for a model stream that broke off
// or ended before its last event (its CodexErr::Stream), whatever the cause
// after it: "Transport error: network error: error decoding response body",
// "stream closed before response.completed".
const codexStreamBroke = "stream disconnected before completion:"

// codexConnection are the failures Codex types as a request or a stream that
// broke: with no HTTP status, no answer came (the SDKs retry those).
var codexConnection = []string{"http_connection_failed", "response_stream_connection_failed", "response_stream_disconnected"}

// retryable answers for the info: the overload and the rate limit by name; a
// status by the SDKs' rule (agent.RetryableStatus); a broken connection or
// stream with no status as a connection error.
func (e codexErrorInfo) retryable() (retryable, overload bool) {
	switch {
	case e.name == "server_overloaded":
		return true, true
	case e.name == "rate_limit_exceeded" || e.name == "internal_server_error":
		return true, false
	case e.status == 0 && slices.Contains(codexConnection, e.name):
		return true, false
	}
	return model.RetryableStatus(e.status)
}

// cause labels the failure in a Step: the status when there is one, else the
// name.
func (e codexErrorInfo) cause() string {
	if e.status != 0 {
		return strconv.Itoa(e.status)
	}
	return e.name
}

// codexFailure is the error of the last task_complete in thread's record
// under home; zero when there is no record or no error in it.
func codexFailure(home, thread string) codexErrorInfo {
	if thread == "" || strings.ContainsAny(thread, `/\*?[`) {
		return codexErrorInfo{}
	}
	files, _ := filepath.Glob(filepath.Join(home, "sessions", "*", "*", "*", "rollout-*-"+thread+".jsonl"))
	if len(files) == 0 {
		return codexErrorInfo{}
	}
	f, err := os.Open(files[len(files)-1])
	if err != nil {
		return codexErrorInfo{}
	}
	defer f.Close()
	var last codexErrorInfo
	s := bufio.NewScanner(f)
	s.Buffer(make([]byte, 0, 64<<10), maxLine)
	for s.Scan() {
		if !bytes.Contains(s.Bytes(), []byte(`"task_complete"`)) {
			continue
		}
		var rec struct {
			Type    string `json:"type"`
			Payload struct {
				Type  string `json:"type"`
				Error *struct {
					Info codexErrorInfo `json:"codex_error_info"`
				} `json:"error"`
			} `json:"payload"`
		}
		if json.Unmarshal(s.Bytes(), &rec) != nil || rec.Type != "event_msg" || rec.Payload.Type != "task_complete" {
			continue
		}
		last = codexErrorInfo{}
		if rec.Payload.Error != nil {
			last = rec.Payload.Error.Info
		}
	}
	return last
}
