package main

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/countersign/countersign/agent/agenttest"
	"github.com/countersign/countersign/agent/clitest"
	"github.com/countersign/countersign/envelope"
	"github.com/countersign/countersign/journal"
	"github.com/countersign/countersign/telegram/telegramtest"
	"github.com/countersign/countersign/vault"
)

// botMCP writes a script that runs "countersign mcp" on data, as an agent's MCP config
// names it: one command, no arguments, so that no client's argument parsing
// (the Inspector splits at "--") comes between it and this binary.
func botMCP(t *testing.T, data string) string {
	t.Helper()
	self, err := filepath.Abs(os.Args[0])
	if err != nil {
		t.Fatal(err)
	}
	policies, err := filepath.Abs("../../policies.yaml")
	if err != nil {
		t.Fatal(err)
	}
	script := filepath.Join(t.TempDir(), "bot-mcp")
	// The agent's own environment is the bot's settings' too: the script
	// starts the server with the test's, as childEnv does.
	var unset []string
	for _, kv := range os.Environ() {
		if name, _, _ := strings.Cut(kv, "="); botSetting(name) {
			unset = append(unset, "-u "+name)
		}
	}
	body := fmt.Sprintf("#!/bin/sh\nexec env %s COUNTERSIGN_CHILD=1 BOT_OPERATORS=100 BOT_APPROVERS=100 '%s' -test.run='^$' -- mcp -data '%s' -policies '%s'\n",
		strings.Join(unset, " "), self, data, policies)
	if err := os.WriteFile(script, []byte(body), 0o700); err != nil {
		t.Fatal(err)
	}
	return script
}

// mcpConfig is Claude Code's --mcp-config naming the server "countersign".
func mcpConfig(command string) string {
	b, _ := json.Marshal(map[string]any{"mcpServers": map[string]any{"countersign": map[string]any{"command": command, "args": []string{}}}})
	return string(b)
}

// toolResult is the contract as an agent CLI hands an MCP tool's result to the
// model: the structured content, as JSON text (Codex puts a line with the
// call's wall time before it).
type toolResult struct {
	Status      string `json:"status"`
	OperationID string `json:"operation_id"`
	SideEffect  string `json:"side_effect"`
	line        string
}

func readResult(content string) toolResult {
	var r toolResult
	body := content
	if _, out, ok := strings.Cut(content, "\nOutput:\n"); ok { // Codex's: after a "Wall time" line
		body = out
	}
	json.Unmarshal([]byte(body), &r) // text that is not the contract leaves it empty, and the checks say so
	r.line = content
	return r
}

// sendThenAwait is the model's script: send the message; while the last result
// is pending, await its outcome; then end the turn with a text made from the
// last result.
func sendThenAwait(chatID, text string) func(agenttest.Request) agenttest.Reply {
	return func(req agenttest.Request) agenttest.Reply {
		last, ok := req.LastResult()
		if !ok {
			send := agenttest.Send(chatID, text)
			send.Name = "mcp__countersign__commit_send_message"
			return agenttest.Message("tool_use", "", send)
		}
		r := readResult(last.Content)
		if r.Status == "pending" && r.OperationID != "" {
			in, _ := json.Marshal(map[string]any{"operation_id": r.OperationID, "timeout_s": 20})
			return agenttest.Message("tool_use", "", agenttest.Call("mcp__countersign__await_outcome", string(in)))
		}
		return agenttest.Message("end_turn", "Outcome: "+last.Content)
	}
}

// Claude Code, a real outside agent, sends a message through countersign mcp beside a
// running bot: the commit comes back pending at once, the bot shows its card in
// Telegram, a tap approves it, the bot delivers it once, and the agent's
// await_outcome sees it committed; the CLI's final result reports it.
func TestClaudeCodeSendsThroughBotMCP(t *testing.T) {
	t.Parallel()
	if testing.Short() {
		t.Skip("starts child processes")
	}
	claude := clitest.Find(t, clitest.ClaudeCode)
	srv := telegramtest.NewServer(t, telegramtest.Options{Token: childToken})
	data, logs, wait := childData(t, srv)
	bot := startBot(t, srv, data)
	wait("the first poll", func(s *telegramtest.Server) bool { return s.Polling() })

	const text = "hello from Claude Code"
	model := agenttest.NewServerFunc(t, sendThenAwait("222", text))
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	run := clitest.Start(t, ctx, clitest.Command{Bin: claude, Env: clitest.ClaudeEnv(model.URL), Args: []string{
		"-p", "Send hello to chat 222.", "--output-format", "stream-json", "--verbose",
		"--mcp-config", mcpConfig(botMCP(t, data)), "--strict-mcp-config",
		"--allowedTools", "mcp__countersign__commit_send_message,mcp__countersign__await_outcome"}})

	card := approveCard(srv, wait)
	r := run.Wait()

	final, _ := r.Final()
	if !r.Succeeded() {
		t.Fatalf("claude: %s\nbot log:\n%s", r.Summary(), logs())
	}
	if !strings.Contains(card.Text, text) {
		t.Errorf("card %q does not show the text", card.Text)
	}
	if !strings.Contains(card.Text, "\nAsked by: MCP session of claude-code") {
		t.Errorf("card %q does not say which agent asked", card.Text)
	}
	if init, _ := r.Init(); !slices.Contains(init.Tools, "mcp__countersign__commit_send_message") ||
		len(init.MCPServers) != 1 || init.MCPServers[0].Status != "connected" {
		t.Errorf("init: tools %v, servers %+v; want countersign connected with its tools", init.Tools, init.MCPServers)
	}

	// What the model was given back, call by call: pending, then committed.
	uses, results := r.ToolUses(), r.ToolResults()
	if len(uses) != 2 || uses[0].Name != "mcp__countersign__commit_send_message" || uses[1].Name != "mcp__countersign__await_outcome" || len(results) != 2 {
		t.Fatalf("tool calls %+v, results %+v; want commit_send_message then await_outcome", uses, results)
	}
	pending, outcome := readResult(results[0].ResultText()), readResult(results[1].ResultText())
	opID := pending.OperationID
	if pending.Status != "pending" || opID == "" || !strings.Contains(card.Text, opID) ||
		outcome.OperationID != opID || outcome.Status != "succeeded" || outcome.SideEffect != "committed" {
		t.Errorf("results %q then %q; want %s pending, then succeeded and committed", pending.line, outcome.line, opID)
	}
	if final.Result != "Outcome: "+results[1].ResultText() || final.IsError || r.ExitCode != 0 {
		t.Errorf("final result %q (is_error %v, exit %d); want the outcome the script read", final.Result, final.IsError, r.ExitCode)
	}

	deliveredOnce(t, srv, bot, data, logs, wait, opID, text)
}

// deliveredOnce checks that operation opID, made over MCP, delivered text to
// chat 222 exactly once, along the path of an approved commit, in one attempt;
// it stops the bot first, so that nothing can come after the count.
func deliveredOnce(t *testing.T, srv *telegramtest.Server, bot *exec.Cmd, data string, logs func() string,
	wait func(string, func(*telegramtest.Server) bool), opID, text string) {
	t.Helper()
	wait("the delivery", func(s *telegramtest.Server) bool { return len(s.Messages(222)) == 1 })
	bot.Process.Signal(syscall.SIGTERM)
	if err := bot.Wait(); err != nil {
		t.Errorf("bot after SIGTERM: %v\n%s", err, logs())
	}
	if msgs := srv.Messages(222); len(callsTo(srv, "sendMessage", 222)) != 1 || len(msgs) != 1 || msgs[0].Text != text {
		t.Errorf("sendMessage to 222: %d calls, messages %+v; want one, with the text", len(callsTo(srv, "sendMessage", 222)), msgs)
	}
	journalPath := filepath.Join(data, "journal.db")
	assertPath(t, journalPath, opID, journal.Prepared, journal.Verified, journal.AwaitingApproval, journal.Approved, journal.Committing, journal.Committed)
	j, err := journal.Open(context.Background(), journalPath)
	if err != nil {
		t.Fatal(err)
	}
	defer j.Close()
	if op, err := j.Operation(context.Background(), opID); err != nil || op.Attempts != 1 || op.Surface != "mcp" || op.Transport != "telegram" {
		t.Errorf("journal: %+v (%v); want made over mcp for telegram, sent in 1 attempt", op, err)
	}
	if ops, err := j.Operations(context.Background(), journal.Filter{}); err != nil || len(ops) != 1 {
		t.Errorf("journal: %d operations (%v), want the one", len(ops), err)
	}
}

// The MCP Inspector's command-line client lists countersign mcp's tools, its envelope
// template, and an unknown outcome's envelope as a resource, and reads it.
func TestTheInspectorListsBotMCP(t *testing.T) {
	t.Parallel()
	if testing.Short() {
		t.Skip("starts child processes")
	}
	inspector := clitest.Find(t, clitest.Inspector)
	data := filepath.Join(t.TempDir(), "data")
	v, err := vault.Open(filepath.Join(data, "vault"))
	if err != nil {
		t.Fatal(err)
	}
	created := time.Now().UTC().Truncate(time.Second)
	if _, err := v.Write(envelope.Envelope{OperationID: "op-inspected", Action: envelope.ActionSendMessage, Tool: "commit_send_message",
		Status: envelope.StatusUnknown, LastConfirmed: "committing", NextAction: envelope.NextVerify, Target: "222",
		PayloadSHA256: strings.Repeat("ab", 32), Created: created, Expires: created.Add(time.Hour), Attempts: 1,
		Response: "timeout after the request was sent", Excerpt: "held at the door"}); err != nil {
		t.Fatal(err)
	}
	server := botMCP(t, data)
	tests := []struct {
		method string
		args   []string
		want   []string
	}{
		{"tools/list", nil, []string{`"commit_send_message"`, `"commit_publish_post"`, `"prepare_reply"`, `"await_outcome"`,
			`"get_operation"`, `"list_pending"`, `"list_envelopes"`, `"read_envelope"`, `"request_verification"`, `"operation_id"`}},
		{"resources/templates/list", nil, []string{`"countersign://envelopes/{operation_id}"`}},
		{"resources/list", nil, []string{`"countersign://envelopes/op-inspected"`}},
		{"resources/read", []string{"--uri", "countersign://envelopes/op-inspected"}, []string{"op-inspected", "held at the door"}},
	}
	for _, tt := range tests {
		t.Run(tt.method, func(t *testing.T) {
			ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
			defer cancel()
			args := append([]string{"--cli", server, "--method", tt.method}, tt.args...)
			// Inspector 1.0.3 looks for its package.json relative to the working
			// folder but imports it relative to its script: run it from beside it.
			r := clitest.Run(t, ctx, clitest.Command{Bin: inspector, Args: args, Dir: filepath.Dir(inspector)})
			if r.ExitCode != 0 || r.Err != nil || !json.Valid([]byte(r.Stdout)) {
				t.Fatalf("inspector %s: %s\nstdout:\n%s", tt.method, r.Summary(), r.Stdout)
			}
			for _, w := range tt.want {
				if !strings.Contains(r.Stdout, w) {
					t.Errorf("inspector %s does not list %s:\n%s", tt.method, w, r.Stdout)
				}
			}
		})
	}
}
