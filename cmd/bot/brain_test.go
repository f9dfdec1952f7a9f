package main

import (
	"bytes"
	"cmp"
	"context"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/countersign/countersign/agent/agenttest"
	"github.com/countersign/countersign/agent/cli"
	"github.com/countersign/countersign/agent/clitest"
	"github.com/countersign/countersign/journal"
	"github.com/countersign/countersign/telegram/telegramtest"
)

// brain is a countersign run with an agent CLI as the brain behind chat 100, its model
// the scripted server.
type brain struct {
	cli   brainCLI
	srv   *telegramtest.Server
	model *agenttest.Server
	data  string
	bot   *exec.Cmd
	logs  func() string
	wait  func(string, func(*telegramtest.Server) bool)
}

// brainCLI is an agent CLI the brain tests run, with what differs between
// them: how a failure's cause is labelled in the log, how many messages at
// least a resumed request carries, and the tools of its own it offers beside
// Countersign's.
type brainCLI struct {
	name          string
	tool          clitest.Tool
	overloadCause string
	// authSaid and overloadSaid begin what the CLI says of a rejected key and
	// of an overload.
	authSaid, overloadSaid string
	// turnsSaid is what the chat hears of a run that reached model.steps.
	turnsSaid      string
	resumedHistory int
	ownTools       []string
	// env is the bot's environment for it, against the model server at url.
	env func(t *testing.T, bin, url string) []string
}

var (
	claudeBrain = brainCLI{name: "claude-code", tool: clitest.ClaudeCode, overloadCause: "529", resumedHistory: 5,
		authSaid: "Invalid API key", overloadSaid: "API Error: 529 Overloaded", turnsSaid: "Reached maximum number of turns (2)",
		env: func(t *testing.T, bin, url string) []string {
			return append(clitest.ClaudeEnv(url), "COUNTERSIGN_CLAUDE="+bin, "HOME="+t.TempDir())
		}}
	// Codex reads Countersign's resources with tools of its own, and offers
	// request_user_input (which exec answers itself): none touches the host.
	codexBrain = brainCLI{name: "codex", tool: clitest.Codex, overloadCause: "server_overloaded", resumedHistory: 3,
		authSaid: "unexpected status 401 Unauthorized", overloadSaid: "Selected model is at capacity",
		turnsSaid: "reached its bound of 2 model turns",
		ownTools:  []string{"list_mcp_resources", "list_mcp_resource_templates", "read_mcp_resource", "request_user_input"},
		env: func(t *testing.T, bin, url string) []string {
			return []string{"COUNTERSIGN_CODEX=" + bin, "CODEX_HOME=" + t.TempDir(), "HOME=" + t.TempDir(),
				"OPENAI_BASE_URL=" + url + "/v1", "OPENAI_API_KEY=" + clitest.TestAPIKey,
				// A model Codex has no metadata for: its tools come as functions.
				"OPENAI_MODEL=agenttest-model"}
		}}
	brainCLIs = []brainCLI{claudeBrain, codexBrain}
)

// eachBrain runs test once for each agent CLI, as a subtest.
func eachBrain(t *testing.T, test func(t *testing.T, c brainCLI)) {
	for _, c := range brainCLIs {
		t.Run(c.name, func(t *testing.T) { test(t, c) })
	}
}

// startBrain starts the bot with COUNTERSIGN_AGENT=c.name, the default policy
// with edits (old text -> new), and the model answering with script.
func startBrain(t *testing.T, c brainCLI, script func(agenttest.Request) agenttest.Reply, edits ...string) *brain {
	t.Helper()
	if testing.Short() {
		t.Skip("starts child processes")
	}
	bin := clitest.Find(t, c.tool)
	b := &brain{cli: c, srv: telegramtest.NewServer(t, telegramtest.Options{Token: childToken})}
	b.data, b.logs, b.wait = childData(t, b.srv)
	src, err := os.ReadFile("../../policies.yaml")
	if err != nil {
		t.Fatal(err)
	}
	policy := string(src)
	for i := 0; i+1 < len(edits); i += 2 {
		if !strings.Contains(policy, edits[i]) {
			t.Fatalf("the policy has no %q to edit", edits[i])
		}
		policy = strings.Replace(policy, edits[i], edits[i+1], 1)
	}
	policies := filepath.Join(t.TempDir(), "policies.yaml")
	if err := os.WriteFile(policies, []byte(policy), 0o600); err != nil {
		t.Fatal(err)
	}
	b.model = agenttest.NewServerFunc(t, script)
	env := append(c.env(t, bin, b.model.URL), "COUNTERSIGN_AGENT="+c.name)
	b.bot = startBotWith(t, b.srv, b.data, env, "-policies", policies)
	b.wait("the first poll", func(s *telegramtest.Server) bool { return s.Polling() })
	return b
}

// said waits for a message in chat 100 that contains text, and returns it.
func (b *brain) said(text string) telegramtest.Message {
	var got telegramtest.Message
	b.wait("a reply with "+strconv.Quote(text), func(s *telegramtest.Server) bool {
		for _, m := range s.Messages(100) {
			if strings.Contains(m.Text, text) {
				got = m
				return true
			}
		}
		return false
	})
	return got
}

// stop ends the bot, so that nothing comes after what the test counts, and
// opens its journal.
func (b *brain) stop(t *testing.T) *journal.Journal {
	t.Helper()
	b.bot.Process.Signal(syscall.SIGTERM)
	if err := b.bot.Wait(); err != nil {
		t.Errorf("bot after SIGTERM: %v\n%s", err, b.logs())
	}
	j, err := journal.Open(context.Background(), filepath.Join(b.data, "journal.db"))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { j.Close() })
	return j
}

// sessionHeader is the session id the CLI names in every request: Claude
// Code's session, Codex's thread.
func sessionHeader(r agenttest.Request) string {
	return cmp.Or(r.Header.Get("X-Claude-Code-Session-Id"), r.Header.Get("Thread-Id"))
}

// lastUserText is the text of the request's last user message, "" when it
// carries only tool results (or, for Codex, a tool result came after it).
// askedFor is the first of reqs whose last user text begins with text: the
// first request of the run of the message text.
func askedFor(reqs []agenttest.Request, text string) (agenttest.Request, bool) {
	for _, r := range reqs {
		if strings.HasPrefix(lastUserText(r), text) {
			return r, true
		}
	}
	return agenttest.Request{}, false
}

func lastUserText(r agenttest.Request) string {
	var body struct {
		Messages []struct {
			Role    string          `json:"role"`
			Type    string          `json:"type"`
			Content json.RawMessage `json:"content"`
		} `json:"messages"`
		Input json.RawMessage `json:"input"` // the Responses API's (Codex)
	}
	json.Unmarshal(r.Body, &body)
	if body.Messages == nil {
		json.Unmarshal(body.Input, &body.Messages)
	}
	for i := len(body.Messages) - 1; i >= 0; i-- {
		m := body.Messages[i]
		if m.Type == "function_call_output" {
			return ""
		}
		if m.Role != "user" {
			continue
		}
		var s string
		if json.Unmarshal(m.Content, &s) == nil {
			return s
		}
		var blocks []struct{ Type, Text string }
		json.Unmarshal(m.Content, &blocks)
		var texts []string
		for _, bl := range blocks {
			if (bl.Type == "text" || bl.Type == "input_text") && !strings.HasPrefix(bl.Text, "<system-reminder>") &&
				!strings.HasPrefix(bl.Text, "<environment_context>") {
				texts = append(texts, bl.Text)
			}
		}
		if len(texts) > 0 {
			return strings.Join(texts, "\n")
		}
		return ""
	}
	return ""
}

// sendFirst is the model's script for a send: commit_send_message to chat 222
// on the operator's message, then, given its pending result, a text naming the
// operation. Other messages get "ok".
func sendFirst(text string) func(agenttest.Request) agenttest.Reply {
	return func(req agenttest.Request) agenttest.Reply {
		if last, ok := req.LastResult(); ok && lastUserText(req) == "" {
			return agenttest.Message("end_turn", "Asked for approval: "+readResult(last.Content).OperationID)
		}
		if strings.HasPrefix(lastUserText(req), "Send ") {
			send := agenttest.Send("222", text)
			send.Name = "mcp__countersign__commit_send_message"
			return agenttest.Message("tool_use", "", send)
		}
		return agenttest.Message("end_turn", "ok")
	}
}

var opIDPattern = regexp.MustCompile(`op-[0-9a-z-]+`)

// A message in the chat becomes a run of the agent CLI that calls
// commit_send_message through Countersign's own MCP server, in the chat's task:
// "typing…" while it works, the card in the approver's chat, the CLI's final
// text in the chat, and one delivery for one tap. The next message resumes the
// same session, its request carrying the first message's history; /new starts
// another.
func TestAgentCLIIsTheBrain(t *testing.T) {
	t.Parallel()
	eachBrain(t, testIsTheBrain)
}

func testIsTheBrain(t *testing.T, c brainCLI) {
	const text = "hello from the brain"
	b := startBrain(t, c, sendFirst(text))
	b.srv.PushMessage(100, 100, "Send hello to chat 222")
	approveCard(b.srv, b.wait)
	final := b.said("Asked for approval: op-")
	opID := opIDPattern.FindString(final.Text)
	b.wait("the delivery", func(s *telegramtest.Server) bool { return len(s.Messages(222)) == 1 })

	b.srv.PushMessage(100, 100, "And the next thing?")
	b.said("ok")
	b.srv.PushMessage(100, 100, "/new")
	b.said("Started afresh")
	b.srv.PushMessage(100, 100, "A fresh start")
	b.wait("the third run", func(*telegramtest.Server) bool { _, ok := askedFor(b.model.Requests(), "A fresh start"); return ok })
	b.wait("its answer", func(s *telegramtest.Server) bool { return strings.Count(texts(s.Messages(100)), "ok") == 2 })
	j := b.stop(t)

	// Each run's request is found by what it asks, not by its place: a CLI
	// may make a request of its own beside them.
	reqs := b.model.Requests()
	first, _ := askedFor(reqs, "Send hello to chat 222")
	resumed, _ := askedFor(reqs, "And the next thing?")
	fresh, _ := askedFor(reqs, "A fresh start")
	session := sessionHeader(first)
	if session == "" || sessionHeader(resumed) != session || sessionHeader(fresh) == session {
		t.Errorf("sessions of the runs' requests: %q %q %q; want one for the first two messages, another after /new",
			session, sessionHeader(resumed), sessionHeader(fresh))
	}
	if body := string(resumed.Body); resumed.Messages < c.resumedHistory || !strings.Contains(body, "Send hello to chat 222") || !strings.Contains(body, opID) {
		t.Errorf("the resumed request has %d messages; want the first message's history (its text and %s)", resumed.Messages, opID)
	}
	if body := string(fresh.Body); strings.Contains(body, "Send hello to chat 222") {
		t.Error("the request after /new carries the old history")
	}
	if got, err := j.Session(context.Background(), c.name, "100"); err != nil || got != sessionHeader(fresh) {
		t.Errorf("the chat's session = %q (%v), want the one after /new, %q", got, err, sessionHeader(fresh))
	}
	if tools := first.Tools; len(tools) == 0 || !allCountersign(tools, c.ownTools) {
		t.Errorf("the model was offered %v; want Countersign's tools only", tools)
	}
	assertPath(t, filepath.Join(b.data, "journal.db"), opID, journal.Prepared, journal.Verified, journal.AwaitingApproval, journal.Approved, journal.Committing, journal.Committed)
	op, err := j.Operation(context.Background(), opID)
	if err != nil {
		t.Fatal(err)
	}
	task, err := j.Task(context.Background(), op.TaskID)
	if err != nil || task.Chat != "100" || task.Requester != 100 || task.Summary != "chat" || op.Attempts != 1 {
		t.Errorf("task %+v (%v), op attempts %d; want the chat's own task, requested by 100, sent once", task, err, op.Attempts)
	}
	if sends := len(callsTo(b.srv, "sendMessage", 222)); sends != 1 {
		t.Errorf("sendMessage to 222: %d calls, want 1", sends)
	}
	if len(callsTo(b.srv, "sendChatAction", 100)) == 0 {
		t.Error("no typing action in chat 100 while the CLI ran")
	}
}

// allCountersign reports whether every tool name is one of Countersign's, or
// one of the CLI's own that may be.
func allCountersign(names, own []string) bool {
	for _, n := range names {
		if !strings.HasPrefix(n, "mcp__countersign__") && !slices.Contains(own, n) {
			return false
		}
	}
	return true
}

func texts(msgs []telegramtest.Message) string {
	var b strings.Builder
	for _, m := range msgs {
		b.WriteString(m.Text + "\n")
	}
	return b.String()
}

func callsTo(srv *telegramtest.Server, method string, chat int64) []telegramtest.Call {
	var out []telegramtest.Call
	for _, c := range srv.CallsTo(method) {
		if c.ChatID == chat {
			out = append(out, c)
		}
	}
	return out
}

// fastRetries shortens the policy's backoff, so a retry comes within a second.
var fastRetries = []string{"    base: 1s\n", "    base: 100ms\n"}

// An overload (529) after the commit returned is retried by the coordinator,
// not the CLI: the second attempt resumes the same session with the
// continuation prompt, its request carries the call that already returned, and
// the tool does not run twice; the chat never sees the overload.
func TestAgentCLIOverloadIsRetriedInTheSession(t *testing.T) {
	t.Parallel()
	eachBrain(t, testOverloadIsRetried)
}

func testOverloadIsRetried(t *testing.T, c brainCLI) {
	script := func(req agenttest.Request) agenttest.Reply {
		switch {
		case lastUserText(req) == cli.ContinuationPrompt:
			return agenttest.Message("end_turn", "Continued: it waits for approval.")
		case req.N == 2:
			return agenttest.Fail(agenttest.Overload)
		}
		return sendFirst("held through an overload")(req)
	}
	b := startBrain(t, c, script, fastRetries...)
	b.srv.PushMessage(100, 100, "Send hello to chat 222")
	b.said("Continued: it waits for approval.")
	approveCard(b.srv, b.wait)
	b.wait("the delivery", func(s *telegramtest.Server) bool { return len(s.Messages(222)) == 1 })
	j := b.stop(t)

	reqs := b.model.Requests()
	if len(reqs) != 3 {
		t.Fatalf("%d model requests, want 3 (the call, the overload, the continuation)\n%s", len(reqs), b.logs())
	}
	if s := sessionHeader(reqs[0]); s == "" || sessionHeader(reqs[2]) != s {
		t.Errorf("the retry ran in session %q, want the first attempt's %q", sessionHeader(reqs[2]), s)
	}
	retried := string(reqs[2].Body)
	if !strings.Contains(retried, "Send hello to chat 222") || len(reqs[2].Results) != 1 {
		t.Errorf("the continuation carries %d tool results; want the history with the one call that returned", len(reqs[2].Results))
	}
	if n := strings.Count(retried, cli.ContinuationPrompt); n != 1 || strings.Count(retried, "Send hello to chat 222") != 1 {
		t.Errorf("the retried request has the continuation prompt %d times, and the operator's text %d times; want each once",
			n, strings.Count(retried, "Send hello to chat 222"))
	}
	ops, err := j.Operations(context.Background(), journal.Filter{})
	if err != nil || len(ops) != 1 || ops[0].State != journal.Committed || ops[0].Attempts != 1 {
		t.Errorf("operations %+v (%v); want one, committed in one attempt", ops, err)
	}
	if chat := texts(b.srv.Messages(100)); strings.Contains(chat, "529") || strings.Contains(chat, "Overloaded") {
		t.Errorf("the chat was told of the withheld overload:\n%s", chat)
	}
	logs := b.logs()
	if !strings.Contains(logs, "retry("+c.overloadCause) || strings.Count(logs, `step="start(pid`) != 2 {
		t.Errorf("the log does not show two attempts with a retry after %s:\n%s", c.overloadCause, logs)
	}
}

// A rate limit's wait reaches the coordinator in the configuration the bot
// runs the CLI in, with the CLI's own retries off, where the CLI says nothing
// of it (agent/cli/testdata/ratelimit.jsonl, codex-ratelimit.jsonl): the
// attempt's relay reads it from the answer, and the retry waits what the
// service asked (1.25 s), not the policy's backoff (100 ms here).
func TestAgentCLIRateLimitWaitsWhatTheServiceAsked(t *testing.T) {
	t.Parallel()
	eachBrain(t, testRateLimitWaitsWhatTheServiceAsked)
}

func testRateLimitWaitsWhatTheServiceAsked(t *testing.T, c brainCLI) {
	script := func(req agenttest.Request) agenttest.Reply {
		if req.N == 1 {
			return agenttest.RateLimitedMs(1250 * time.Millisecond)
		}
		return agenttest.Message("end_turn", "Answered after the wait.")
	}
	b := startBrain(t, c, script, fastRetries...)
	b.srv.PushMessage(100, 100, "Say hello")
	b.said("Answered after the wait.")
	b.stop(t)
	logs := b.logs()
	if !strings.Contains(logs, "wait 1.25s)") {
		t.Errorf("the log shows no retry after the service's 1.25 s:\n%s", logs)
	}
	// The CLI's own retries are off: the rate-limited request is the first
	// run's last, and every later one is the second run's, started after the
	// wait. (What the second run asks after its answer, Claude Code's
	// non-streamed request at times, is its own.)
	starts := startTimes.FindAllStringSubmatch(logs, -1)
	if len(starts) != 2 {
		t.Fatalf("%d runs started, want 2:\n%s", len(starts), logs)
	}
	second, err := time.Parse(time.RFC3339Nano, starts[1][1])
	if err != nil {
		t.Fatal(err)
	}
	reqs := b.model.Requests()
	early := len(reqs) < 2
	for i, r := range reqs {
		early = early || i > 0 && r.At.Before(second)
	}
	if early {
		t.Errorf("model requests, the second run started at %s; want the rate-limited one alone before it, the CLI's own retries off\n%s",
			second.Format("15:04:05.000"), describe(reqs))
	}
}

// describe lists model requests, a line each, for a failure to show what the
// CLI asked.
func describe(reqs []agenttest.Request) string {
	var lines []string
	for _, r := range reqs {
		lines = append(lines, fmt.Sprintf("#%d %s %s streamed=%v session=%q asks %q",
			r.N, r.At.Format("15:04:05.000"), r.Path, r.Streamed, sessionHeader(r), lastUserText(r)))
	}
	return strings.Join(lines, "\n")
}

// startTimes finds, in the bot's log, when each agent CLI run started.
var startTimes = regexp.MustCompile(`time=(\S+) [^\n]*step="start\(pid \d+\)"`)

// The policy's model.steps bounds an agent CLI's model turns, the same for
// both: Claude Code counts its own (--max-turns), and Codex, which has no such
// switch, is counted by the attempt's relay, which passes no request past the
// bound and ends the run. A model that keeps calling a tool makes two
// requests under steps: 2, and the chat hears the run stopped; nothing is
// retried.
func TestAgentCLITurnsAreBoundedByTheSteps(t *testing.T) {
	t.Parallel()
	eachBrain(t, testTurnsAreBounded)
}

func testTurnsAreBounded(t *testing.T, c brainCLI) {
	script := func(req agenttest.Request) agenttest.Reply {
		draft := agenttest.Call("mcp__countersign__prepare_reply", fmt.Sprintf(`{"text":"draft %d"}`, req.N))
		return agenttest.Message("tool_use", "", draft)
	}
	b := startBrain(t, c, script, "  steps: 8 ", "  steps: 2 ")
	b.srv.PushMessage(100, 100, "Draft something")
	said := b.said("2")
	b.stop(t)
	if n := len(b.model.Requests()); n != 2 {
		t.Errorf("%d model requests, want 2 under steps: 2", n)
	}
	if !strings.Contains(said.Text, c.turnsSaid) {
		t.Errorf("the chat was told %q, want the turn bound (%q)", said.Text, c.turnsSaid)
	}
	if logs := b.logs(); strings.Contains(logs, "step=\"retry(") {
		t.Errorf("a run ended at its turn bound was retried:\n%s", logs)
	}
}

// A model stream that stalls is cut by the coordinator's watchdog (the
// policy's stall settings), and the run continues in its session. The stream
// stalls for a minute and the default abort is 45 s, so a second request
// sooner than that shows the policy's 15 s at work. The watchdog counts an
// attempt's start as silence, so the abort is long enough that a busy
// machine's slow start of the CLI (5 s was cut eight times in a row beside a
// mutation run) is not taken for a stall.
// (The watchdog's timing is tested exactly, on an injected clock, in
// agent/cli.)
func TestAgentCLIStallIsCutByTheWatchdog(t *testing.T) {
	t.Parallel()
	eachBrain(t, testStallIsCut)
}

func testStallIsCut(t *testing.T, c brainCLI) {
	script := func(req agenttest.Request) agenttest.Reply {
		if req.N == 1 {
			return agenttest.Message("end_turn", "never said").StallAfter(1, time.Minute)
		}
		return agenttest.Message("end_turn", "Answered after the stall.")
	}
	b := startBrain(t, c, script, append(fastRetries, "stall_warning: 10s", "stall_warning: 2s", "stall_abort: 45s", "stall_abort: 15s")...)
	b.srv.PushMessage(100, 100, "Say something")
	b.said("Answered after the stall.")
	b.stop(t)
	logs := b.logs()
	for _, step := range []string{"step=stall_warning", "step=stall_abort", "retry(stall"} {
		if !strings.Contains(logs, step) {
			t.Errorf("the log has no %s:\n%s", step, logs)
		}
	}
	reqs := b.model.Requests()
	if len(reqs) != 2 || sessionHeader(reqs[1]) != sessionHeader(reqs[0]) {
		t.Fatalf("model requests:\n%s\nwant the stalled one and its continuation, in one session", describe(reqs))
	}
	if gap := reqs[1].At.Sub(reqs[0].At); gap >= 45*time.Second {
		t.Errorf("the continuation came %s after the stalled request; want it before the default abort (45 s)", gap)
	}
	if body := string(reqs[1].Body); !strings.Contains(body, "Say something") || lastUserText(reqs[1]) != cli.ContinuationPrompt {
		t.Errorf("model requests:\n%s\nwant the continuation prompt after the operator's message", describe(reqs))
	}
}

// A model stream whose connection breaks after its first events is a
// failure the coordinator retries: the run continues in its session with the
// continuation prompt, and the chat gets the answer. (Codex types such a
// failure "other"; it stopped the run, told "could not finish", until the
// provider read its message.)
func TestAgentCLIBrokenStreamIsContinued(t *testing.T) {
	t.Parallel()
	eachBrain(t, testBrokenStreamIsContinued)
}

func testBrokenStreamIsContinued(t *testing.T, c brainCLI) {
	script := func(req agenttest.Request) agenttest.Reply {
		if req.N == 1 {
			return agenttest.Message("end_turn", "never said").DropAfter(1)
		}
		return agenttest.Message("end_turn", "Answered after the break.")
	}
	b := startBrain(t, c, script, fastRetries...)
	b.srv.PushMessage(100, 100, "Say something")
	b.said("Answered after the break.")
	b.stop(t)
	if logs := b.logs(); !strings.Contains(logs, `step="retry(`) {
		t.Errorf("the log has no retry of the broken attempt:\n%s", logs)
	}
	// Two requests, the CLI's own fallback off (Claude Code would otherwise
	// ask again without streaming, itself): the broken one and the
	// continuation, in its session. (Claude Code joins the prompt to the
	// message the broken request left unanswered.)
	reqs := b.model.Requests()
	if len(reqs) != 2 || sessionHeader(reqs[1]) != sessionHeader(reqs[0]) || !strings.HasSuffix(lastUserText(reqs[1]), cli.ContinuationPrompt) {
		t.Errorf("model requests:\n%s\nwant the broken one, then the continuation prompt in its session", describe(reqs))
	}
}

var pidPattern = regexp.MustCompile(`step="start\(pid (\d+)\)"`)

// /stop ends the CLI's run: its whole process group is gone, and the chat is
// told.
func TestAgentCLIStopKillsTheRun(t *testing.T) {
	t.Parallel()
	eachBrain(t, testStopKillsTheRun)
}

func testStopKillsTheRun(t *testing.T, c brainCLI) {
	script := func(agenttest.Request) agenttest.Reply {
		return agenttest.Message("end_turn", "never said").HangFor(time.Minute)
	}
	b := startBrain(t, c, script)
	b.srv.PushMessage(100, 100, "Take your time")
	b.wait("the model request", func(*telegramtest.Server) bool { return len(b.model.Requests()) == 1 })
	m := pidPattern.FindStringSubmatch(b.logs())
	if m == nil {
		t.Fatalf("no start(pid) step in the log:\n%s", b.logs())
	}
	pid, _ := strconv.Atoi(m[1])
	if err := syscall.Kill(-pid, 0); err != nil {
		t.Fatalf("the run's process group %d: %v, want it running", pid, err)
	}
	// The message reached the model, yet it is not in the CLI's arguments,
	// which any local user reads in /proc while the run lasts.
	cmdline, err := os.ReadFile("/proc/" + m[1] + "/cmdline")
	if err != nil || strings.Contains(string(cmdline), "Take your time") {
		t.Errorf("the CLI's arguments (%v): %q; want them without the message", err, bytes.ReplaceAll(cmdline, []byte{0}, []byte{' '}))
	}
	if body := string(b.model.Requests()[0].Body); !strings.Contains(body, "Take your time") {
		t.Errorf("the model was not asked the message")
	}
	b.srv.PushMessage(100, 100, "/stop")
	b.said("Stopped, as you asked")
	// The group is killed before the chat is told; its members other than
	// the CLI (Codex's helpers) are reaped by init a moment later.
	if err := groupGone(pid, 5*time.Second); err != syscall.ESRCH {
		t.Errorf("after /stop, the process group %d: %v; want it gone (ESRCH)", pid, err)
	}
	b.stop(t)
}

// groupGone waits until process group pgid has no process left, or d has
// passed, and returns what signal 0 to the group last said (ESRCH: none left).
func groupGone(pgid int, d time.Duration) error {
	deadline := time.Now().Add(d)
	for {
		err := syscall.Kill(-pgid, 0)
		if err == syscall.ESRCH || time.Now().After(deadline) {
			return err
		}
		time.Sleep(10 * time.Millisecond) // another process's reaping is not observable otherwise
	}
}

// Failures the coordinator gives up on are told once, in one line: an auth
// error at once (not retryable), overloads after the policy's attempts.
func TestAgentCLIFailuresAreToldOnce(t *testing.T) {
	t.Parallel()
	eachBrain(t, testFailuresAreToldOnce)
}

func testFailuresAreToldOnce(t *testing.T, c brainCLI) {
	tests := []struct {
		name     string
		reply    agenttest.Reply
		edits    []string
		requests int
		said     string
	}{
		{"auth error", agenttest.Fail(agenttest.AuthError), nil, 1, "after 1 attempt(s): " + c.authSaid},
		{"overloads", agenttest.Fail(agenttest.Overload), append([]string{"attempts: 10 ", "attempts: 3 "}, fastRetries...), 3,
			"after 3 attempt(s): " + c.overloadSaid},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			b := startBrain(t, c, func(agenttest.Request) agenttest.Reply { return tt.reply }, tt.edits...)
			b.srv.PushMessage(100, 100, "Say something")
			told := b.said("The agent could not finish")
			b.stop(t)
			if n := len(b.model.Requests()); n != tt.requests {
				t.Errorf("%d model requests, want %d", n, tt.requests)
			}
			if !strings.Contains(told.Text, tt.said) || strings.Contains(told.Text, "\n") {
				t.Errorf("told %q; want one line with %q", told.Text, tt.said)
			}
			if n := strings.Count(texts(b.srv.Messages(100)), c.overloadSaid); n > 1 || strings.Count(texts(b.srv.Messages(100)), "could not finish") != 1 {
				t.Errorf("the chat was told more than once:\n%s", texts(b.srv.Messages(100)))
			}
		})
	}
}

// Two messages sent at once in a chat run one after the other, the second
// resuming the first's session: two runs never share a session at once.
func TestAgentCLIRunsAChatsMessagesInTurn(t *testing.T) {
	t.Parallel()
	eachBrain(t, testRunsInTurn)
}

func testRunsInTurn(t *testing.T, c brainCLI) {
	script := func(req agenttest.Request) agenttest.Reply {
		return agenttest.Message("end_turn", "answered "+lastUserText(req)).HangFor(time.Second)
	}
	b := startBrain(t, c, script)
	b.srv.PushMessage(100, 100, "First")
	b.srv.PushMessage(100, 100, "Second")
	b.said("answered First")
	b.said("answered Second")
	b.stop(t)
	reqs := b.model.Requests()
	if len(reqs) != 2 || sessionHeader(reqs[0]) != sessionHeader(reqs[1]) {
		t.Fatalf("%d requests; want two, the second in the first's session", len(reqs))
	}
	if first := "answered " + lastUserText(reqs[0]); !strings.Contains(string(reqs[1].Body), first) {
		t.Errorf("the second request does not carry the first answer %q", first)
	}
	if gap := reqs[1].At.Sub(reqs[0].At); gap < time.Second {
		t.Errorf("the second run asked %s after the first; want it after the first's answer (1 s)", gap)
	}
}

// After the policy's overloads in a row, the coordinator's next attempt asks
// for the policy's fallback model (--model), in the same session.
func TestAgentCLIFallsBackAfterOverloads(t *testing.T) {
	t.Parallel()
	eachBrain(t, testFallsBack)
}

func testFallsBack(t *testing.T, c brainCLI) {
	script := func(req agenttest.Request) agenttest.Reply {
		if req.N == 1 {
			return agenttest.Fail(agenttest.Overload)
		}
		return agenttest.Message("end_turn", "answered by "+req.Model)
	}
	b := startBrain(t, c, script, append(fastRetries, `fallback: ""`, `fallback: "claude-fallback"`,
		"overloads_before_fallback: 3", "overloads_before_fallback: 1")...)
	b.srv.PushMessage(100, 100, "Say something")
	b.said("answered by claude-fallback")
	b.stop(t)
	reqs := b.model.Requests()
	if len(reqs) != 2 || reqs[0].Model == "claude-fallback" || sessionHeader(reqs[1]) != sessionHeader(reqs[0]) {
		t.Errorf("%d requests (models %q, then the fallback); want the first on the CLI's model, the retry on the fallback, one session", len(reqs), reqs[0].Model)
	}
	if logs := b.logs(); !strings.Contains(logs, "fallback(claude-fallback)") {
		t.Errorf("the log has no fallback step:\n%s", logs)
	}
}
