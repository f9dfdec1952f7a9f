package cli_test

import (
	"context"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/auth"
	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/countersign/countersign/agent/agenttest"
	"github.com/countersign/countersign/agent/cli"
	"github.com/countersign/countersign/agent/clitest"
)

// toolsServer is an MCP server over streamable HTTP behind a bearer token, as
// the coordinator's Gate opens one for a run (none: token ""), with two tools:
// echo, which the run may call, and hidden, which it may not. calls counts
// echo's calls.
func toolsServer(t *testing.T, token string) (cli.Tools, *atomic.Int32) {
	t.Helper()
	var calls atomic.Int32
	s := mcp.NewServer(&mcp.Implementation{Name: "countersign", Version: "0.1.0"}, nil)
	type in struct {
		Text string `json:"text" jsonschema:"the text"`
	}
	type out struct {
		Echo  string `json:"echo"`
		Calls int32  `json:"calls"`
	}
	mcp.AddTool(s, &mcp.Tool{Name: "echo", Description: "Echo text back"},
		func(_ context.Context, _ *mcp.CallToolRequest, v in) (*mcp.CallToolResult, out, error) {
			return nil, out{Echo: v.Text, Calls: calls.Add(1)}, nil
		})
	mcp.AddTool(s, &mcp.Tool{Name: "hidden", Description: "Not for this run"},
		func(context.Context, *mcp.CallToolRequest, in) (*mcp.CallToolResult, out, error) {
			return nil, out{}, nil
		})
	h := mcp.NewStreamableHTTPHandler(func(*http.Request) *mcp.Server { return s }, nil)
	srv := httptest.NewServer(h)
	if token != "" {
		srv.Config.Handler = auth.RequireBearerToken(verifier(token), nil)(h)
	}
	t.Cleanup(srv.Close)
	return cli.Tools{Server: "countersign", URL: srv.URL + "/mcp", Token: token, Names: []string{"echo"}}, &calls
}

// verifier accepts token alone.
func verifier(token string) auth.TokenVerifier {
	return func(_ context.Context, got string, _ *http.Request) (*auth.TokenInfo, error) {
		if got != token {
			return nil, auth.ErrInvalidToken
		}
		return &auth.TokenInfo{Expiration: time.Now().Add(time.Hour)}, nil
	}
}

func appendFile(t *testing.T, path, text string) {
	t.Helper()
	f, err := os.OpenFile(path, os.O_APPEND|os.O_WRONLY, 0)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	if _, err := f.WriteString(text); err != nil {
		t.Fatal(err)
	}
}

// attempt runs one attempt of the Codex provider as the coordinator would (its
// command, stdout line by line into its reader, the exit code), against model,
// with home as its CODEX_HOME; it returns the outcome and the command.
func attempt(t *testing.T, model *agenttest.Server, home string, a cli.Attempt) (cli.Outcome, cli.Command) {
	t.Helper()
	return attemptOf(t, codexOf(t, model, home), a)
}

// codexOf is the provider with home as its CODEX_HOME, asking model.
func codexOf(t *testing.T, model *agenttest.Server, home string) cli.Codex {
	return cli.Codex{Path: clitest.Find(t, clitest.Codex), Home: home,
		// A model Codex has no metadata for: it offers the tools as functions
		// (for its own models it offers them inside a JavaScript "code mode").
		ModelProvider: &cli.CodexModelProvider{ID: "agenttest", BaseURL: model.URL + "/v1", EnvKey: clitest.CodexKeyEnv, Model: "agenttest-model"}}
}

// attemptOf runs attempt a of p.
func attemptOf(t *testing.T, p cli.Codex, a cli.Attempt) (cli.Outcome, cli.Command) {
	t.Helper()
	home := p.Home
	if a.Dir == "" {
		a.Dir = t.TempDir()
	}
	c, err := p.Command(a)
	if err != nil {
		t.Fatal(err)
	}
	for name, data := range c.Files { // as the coordinator writes them
		if err := os.WriteFile(filepath.Join(a.Dir, name), data, 0o600); err != nil {
			t.Fatal(err)
		}
	}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	// CodexEnv gives the test key; the command's own CODEX_HOME comes after it.
	r := clitest.Run(t, ctx, clitest.Command{Bin: c.Path, Args: c.Args, Env: append(clitest.CodexEnv(home), c.Env...), Dir: a.Dir, Stdin: c.Stdin})
	reader := p.Reader()
	for _, line := range strings.Split(r.Stdout, "\n") {
		reader.Line([]byte(line))
	}
	return reader.End(r.ExitCode), c
}

// The provider's run calls Countersign's tool over HTTP with the run's token,
// sees only the tools allowed (not another tool of the server, not a server of
// the user's config, none of Codex's own), and succeeds in a session that the
// next attempt resumes with its history, the tool not called again.
func TestCodexRunsWithCountersignsToolsOnlyAndResumes(t *testing.T) {
	t.Parallel()
	tools, calls := toolsServer(t, "run-token-0042")
	model := agenttest.NewServerFunc(t, func(r agenttest.Request) agenttest.Reply {
		last, _ := r.LastResult()
		switch r.N {
		case 1:
			return agenttest.Message("tool_use", "", agenttest.Call("mcp__countersign__echo", `{"text":"heron"}`))
		case 2:
			_, result, _ := strings.Cut(last.Content, "Output:\n") // after Codex's "Wall time" line
			return agenttest.Message("end_turn", "echoed: "+result)
		}
		return agenttest.Message("end_turn", "resumed after "+last.UseID)
	})
	// A server of the user's own config, which the run must not get.
	home := clitest.CodexHome(t, model.URL)
	mine, _ := toolsServer(t, "")
	appendFile(t, home+"/config.toml", "\n[mcp_servers.mine]\nurl = \""+mine.URL+"\"\ndefault_tools_approval_mode = \"approve\"\n")
	out, cmd := attempt(t, model, home, cli.Attempt{N: 1, Prompt: "echo heron", Tools: tools})
	if !out.OK || out.Text != `echoed: {"calls":1,"echo":"heron"}` || out.Session == "" {
		t.Fatalf("outcome %+v, want OK with the echo, in a session", out)
	}
	if strings.Contains(strings.Join(cmd.Args, " "), tools.Token) {
		t.Errorf("the token is in the arguments: %q", cmd.Args)
	}
	offered := model.Requests()[0].Tools
	if !slices.Contains(offered, "mcp__countersign__echo") {
		t.Errorf("tools offered %v, want mcp__countersign__echo", offered)
	}
	for _, name := range offered {
		if !strings.HasPrefix(name, "mcp__countersign__echo") && !strings.Contains(name, "mcp_resource") && name != "request_user_input" {
			t.Errorf("the model is offered %s (all: %v)", name, offered)
		}
	}

	again, _ := attempt(t, model, home, cli.Attempt{N: 2, Prompt: cli.ContinuationPrompt, Session: out.Session, Tools: tools})
	reqs := model.Requests()
	if !again.OK || again.Session != out.Session || again.Text != "resumed after call_01" || calls.Load() != 1 {
		t.Fatalf("resumed: %+v (session %q), echo called %d times; want the same session, its history, one call", again, out.Session, calls.Load())
	}
	if body := string(reqs[len(reqs)-1].Body); !strings.Contains(body, "echo heron") || !strings.Contains(body, cli.ContinuationPrompt) {
		t.Errorf("the resumed request does not carry the first prompt and the continuation prompt")
	}
}

// Whatever the model, the run offers it Countersign's tools and none of Codex's
// own that reach the host: a model in Codex's catalog (gpt-5.5) would be
// offered apply_patch, whose answers tell whether a host file exists and what
// it holds even under the read-only sandbox, and a tool search in place of
// Countersign's tools. What remains are Codex's readers of MCP resources (of
// Countersign's server, the only one) and request_user_input, which exec
// answers itself.
func TestCodexOffersNoToolOfItsOwnWhateverTheModel(t *testing.T) {
	t.Parallel()
	allowed := []string{"namespace mcp__countersign", "function list_mcp_resources", "function list_mcp_resource_templates",
		"function read_mcp_resource", "function request_user_input"}
	tools, _ := toolsServer(t, "run-token-0042")
	for _, name := range []string{"agenttest-model", "gpt-5.5", "gpt-5-codex", "o3"} {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			model := agenttest.NewServer(t, agenttest.Message("end_turn", "done"))
			p := codexOf(t, model, clitest.CodexHome(t, model.URL))
			p.ModelProvider.Model = name
			if out, _ := attemptOf(t, p, cli.Attempt{N: 1, Prompt: "say done", Tools: tools}); !out.OK || len(model.Requests()) != 1 {
				t.Fatalf("outcome %+v after %d requests; want one, answered", out, len(model.Requests()))
			}
			var body struct {
				Model string
				Tools []struct{ Type, Name string }
			}
			if err := json.Unmarshal(model.Requests()[0].Body, &body); err != nil || body.Model != name {
				t.Fatalf("the request (%v) asks model %q, want %q", err, body.Model, name)
			}
			var offered []string
			for _, tool := range body.Tools {
				offered = append(offered, tool.Type+" "+tool.Name)
			}
			if !slices.Contains(offered, "namespace mcp__countersign") {
				t.Errorf("offered %q, want Countersign's tools among them", offered)
			}
			for _, o := range offered {
				if !slices.Contains(allowed, o) {
					t.Errorf("the model is offered %q (all: %q)", o, offered)
				}
			}
		})
	}
}

// A failed run answers the coordinator's two questions from the session's
// typed record: an overload or a rate limit (before the body or inside the
// stream) is retryable, and so is a stream that broke off or ended early
// (which Codex types "other"); the session it ran in can continue; a rejected
// key or a context too long is not retryable.
func TestCodexSaysWhichFailuresAreRetryable(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name                string
		reply               agenttest.Reply
		retryable, overload bool
		cause, said         string
	}{
		{"503 overloaded", agenttest.Fail(agenttest.Overload), true, true, "server_overloaded", "at capacity"},
		{"overloaded inside the stream", agenttest.Message("end_turn", "half").FailAfter(2, agenttest.Overload), true, true, "server_overloaded", "at capacity"},
		{"429", agenttest.RateLimited(time.Second), true, false, "429", "429"},
		{"rate limited inside the stream", agenttest.Message("end_turn", "half").FailAfter(2, agenttest.RateLimit), true, false, "rate_limit_exceeded", "Rate limit"},
		{"500", agenttest.Fail(agenttest.ServerError), true, false, "internal_server_error", "high demand"},
		{"dropped inside the stream", agenttest.Message("end_turn", "half").DropAfter(2), true, false, "response_stream_disconnected", "error decoding response body"},
		{"cut before its end", agenttest.Message("end_turn", "half").CutAfter(2), true, false, "response_stream_disconnected", "stream closed before response.completed"},
		{"401", agenttest.Fail(agenttest.AuthError), false, false, "401", "401"},
		{"prompt too long", agenttest.Fail(agenttest.PromptTooLong), false, false, "context_window_exceeded", "context window"},
	}
	tools, _ := toolsServer(t, "run-token-0042")
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			model := agenttest.NewServer(t, tt.reply)
			out, _ := attempt(t, model, clitest.CodexHome(t, model.URL), cli.Attempt{N: 1, Prompt: "say done", Tools: tools})
			if out.OK || out.Retryable != tt.retryable || out.Overload != tt.overload || out.Cause != tt.cause ||
				!out.CanContinue() || !strings.Contains(out.Text, tt.said) {
				t.Errorf("outcome %+v; want retryable %v, overload %v, cause %q, a session, and the text saying %q",
					out, tt.retryable, tt.overload, tt.cause, tt.said)
			}
		})
	}
}

// A session Codex no longer has (its record gone with a CODEX_HOME wiped)
// cannot be resumed: the run fails before any session, so the coordinator
// forgets it and the next message starts afresh; nothing was asked of the model.
func TestCodexWithoutTheSessionCannotContinue(t *testing.T) {
	t.Parallel()
	model := agenttest.NewServer(t, agenttest.Message("end_turn", "never asked"))
	tools, _ := toolsServer(t, "run-token-0042")
	out, _ := attempt(t, model, t.TempDir(), cli.Attempt{N: 1, Prompt: "say done", Session: "01a233fb-0000-7000-8000-000000000000", Tools: tools})
	if out.OK || out.Retryable || out.CanContinue() || out.Cause != "exit 1" || len(model.Requests()) != 0 {
		t.Errorf("outcome %+v after %d requests; want a failure that is neither retryable nor continuable, exit 1, nothing asked",
			out, len(model.Requests()))
	}
}

// recorded is the provider reading the recorded runs: their session records
// are in testdata/codex-home.
// and their own model service, with Codex's retries off, as they ran.
var recorded = cli.Codex{Home: "testdata/codex-home", ModelProvider: &cli.CodexModelProvider{ID: "agenttest", BaseURL: "http://127.0.0.1:1/v1", EnvKey: "K"}}

// Codex's built-in provider keeps its own retries on (Codex refuses to change
// them): a failure it retries came after its retries, and the bot's are not
// stacked on top. An overload ("Selected model is at capacity. Please try a
// different model.") is still the bot's, for its fallback model.
func TestCodexBuiltInProviderRetriesAreNotStacked(t *testing.T) {
	t.Parallel()
	builtin := cli.Codex{Home: "testdata/codex-home"}
	for _, tt := range []struct {
		file, cause string
		retry       bool
	}{
		{"codex-ratelimit.jsonl", "429", false},
		{"codex-disconnected.jsonl", "response_stream_disconnected", false},
		{"codex-dropped.jsonl", "response_stream_disconnected", false},
		{"codex-auth.jsonl", "401", false},
		{"codex-overload.jsonl", "server_overloaded", true},
	} {
		r, _ := read(t, builtin, tt.file)
		got := r.End(1)
		if got.Retryable != tt.retry || got.Cause != tt.cause {
			t.Errorf("%s: %+v; want retryable by the bot %v, cause %q", tt.file, got, tt.retry, tt.cause)
		}
	}
}

// The provider's two answers from recorded runs: success is exit 0 and a
// completed turn; an overload and a rate limit, before the body or inside the
// stream, are retryable, as the session's record types them; an auth error is
// not; the session is the thread the run started.
func TestCodexReadsItsStream(t *testing.T) {
	t.Parallel()
	tests := []struct {
		file                string
		exit                int
		ok, retry, overload bool
		cause, text         string
	}{
		{"codex-ok.jsonl", 0, true, false, false, "", "all done"},
		{"codex-ok.jsonl", 1, false, false, false, "exit 1", ""},
		{"codex-tooluse.jsonl", 0, true, false, false, "", "done after the tool"},
		{"codex-overload.jsonl", 1, false, true, true, "server_overloaded", "Selected model is at capacity"},
		{"codex-midstream.jsonl", 1, false, true, true, "server_overloaded", "Selected model is at capacity"},
		{"codex-ratelimit.jsonl", 1, false, true, false, "429", "exceeded retry limit, last status: 429"},
		{"codex-auth.jsonl", 1, false, false, false, "401", "unexpected status 401 Unauthorized"},
		// The stream dropped with no HTTP status: retryable, as the bot's
		// provider runs Codex with its own retries off.
		{"codex-disconnected.jsonl", 1, false, true, false, "response_stream_disconnected", "stream disconnected before completion"},
		// Recorded: the connection closed mid-stream, and the stream ended
		// before response.completed. Codex types both "other"; they are a
		// broken stream all the same.
		{"codex-dropped.jsonl", 1, false, true, false, "response_stream_disconnected", "stream disconnected before completion: Transport error"},
		{"codex-cut.jsonl", 1, false, true, false, "response_stream_disconnected", "stream disconnected before completion: stream closed"},
		{"codex-killed_in_tool.jsonl", -1, false, false, false, "exit -1", ""},
	}
	for _, tt := range tests {
		t.Run(strings.TrimSuffix(tt.file, ".jsonl"), func(t *testing.T) {
			r, _ := read(t, recorded, tt.file)
			got := r.End(tt.exit)
			if got.OK != tt.ok || got.Retryable != tt.retry || got.Overload != tt.overload || !got.CanContinue() || got.Cause != tt.cause {
				t.Errorf("exit %d: %+v; want ok %v, retryable %v, overload %v, a session, cause %q",
					tt.exit, got, tt.ok, tt.retry, tt.overload, tt.cause)
			}
			if !strings.HasPrefix(got.Text, tt.text) || tt.text == "" && got.Text != "" {
				t.Errorf("text %q, want it to start %q", got.Text, tt.text)
			}
		})
	}
}

// A tool call is in flight from its item.started to its item.completed, and
// only then: the stall watch lets a waiting tool be.
func TestCodexKnowsWhenAToolRuns(t *testing.T) {
	t.Parallel()
	_, inTool := read(t, recorded, "codex-tooluse.jsonl")
	if want := []bool{false, false, false, true, false, false, false}; !slices.Equal(inTool, want) {
		t.Errorf("in a tool after each line: %v, want %v", inTool, want)
	}
	if _, inTool := read(t, recorded, "codex-killed_in_tool.jsonl"); !inTool[len(inTool)-1] {
		t.Error("a run killed in its tool is not in it")
	}
}

// An attempt's command: exec --json, resumed by thread when asked, none of the
// user's config, Countersign's server only with its allowed tools (its token
// in the environment, not the arguments), Codex's own tools off, the model
// service's retries off, the prompt on standard input (read from there by the
// prompt "-"), never in the arguments.
func TestCodexCommand(t *testing.T) {
	t.Parallel()
	a := cli.Attempt{N: 2, Prompt: "-rf everything", Session: "thread-1", Model: "gpt-fallback", Dir: t.TempDir(),
		Tools: cli.Tools{Server: "countersign", URL: "http://127.0.0.1:1/mcp", Token: "secret-token", Names: []string{"commit_send_message", "await_outcome"}}}
	p := cli.Codex{Path: "/bin/codex", Home: "/srv/codex", ModelProvider: &cli.CodexModelProvider{ID: "mine", BaseURL: "http://m/v1", EnvKey: "K"}}
	c, err := p.Command(a)
	if err != nil {
		t.Fatal(err)
	}
	args := strings.Join(c.Args, " ")
	for _, want := range []string{"exec resume --json --skip-git-repo-check --ignore-user-config",
		`mcp_servers={countersign={url="http://127.0.0.1:1/mcp", bearer_token_env_var="COUNTERSIGN_RUN_TOKEN", ` +
			`default_tools_approval_mode="approve", enabled_tools=["commit_send_message", "await_outcome"]}}`,
		"features.shell_tool=false", `web_search="disabled"`, "agents.enabled=false", `model_provider="mine"`,
		"request_max_retries=0, stream_max_retries=0", "-m gpt-fallback", "thread-1 -"} {
		if !strings.Contains(args, want) {
			t.Errorf("args %q lack %q", args, want)
		}
	}
	if strings.Contains(args, "everything") || !strings.HasSuffix(args, " -") || string(c.Stdin) != a.Prompt {
		t.Errorf("args %q, stdin %q: want the prompt %q on stdin only, read from there by the last argument \"-\"", args, c.Stdin, a.Prompt)
	}
	if strings.Contains(args, "secret-token") || !slices.Contains(c.Env, "COUNTERSIGN_RUN_TOKEN=secret-token") ||
		!slices.Contains(c.Env, "CODEX_HOME=/srv/codex") {
		t.Errorf("args %q, env %v: want the token in the environment only", args, c.Env)
	}
	// One file: the model catalog that keeps Codex's own tools away, named by
	// its whole path (Codex resolves the path from its own folder).
	if len(c.Files) != 1 {
		t.Fatalf("files %v, want the model catalog alone", c.Files)
	}
	for name, data := range c.Files {
		if want := "model_catalog_json=" + strconv.Quote(filepath.Join(a.Dir, name)); !slices.Contains(c.Args, want) ||
			!json.Valid(data) || strings.Contains(string(data), "secret-token") {
			t.Errorf("args %q, file %s %q: want it named as %s, JSON, without the token", args, name, data, want)
		}
	}
	for _, bad := range []cli.Codex{{}, {ModelProvider: &cli.CodexModelProvider{ID: "openai"}}} {
		b := a
		if bad.ModelProvider == nil {
			b.Prompt = ""
		}
		if _, err := bad.Command(b); err == nil {
			t.Errorf("%+v with prompt %q: no error", bad, b.Prompt)
		}
	}
}
