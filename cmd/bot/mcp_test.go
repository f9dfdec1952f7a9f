package main

import (
	"bytes"
	"context"
	"encoding/json"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"syscall"
	"testing"
	"time"

	sdk "github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/countersign/countersign/action"
	"github.com/countersign/countersign/journal"
	"github.com/countersign/countersign/telegram/telegramtest"
)

// mcpChild starts "countersign mcp" on data in a child process and connects an MCP
// client to it over stdio; stderr collects what the child says.
func mcpChild(t *testing.T, data string, env ...string) (*sdk.ClientSession, *bytes.Buffer) {
	t.Helper()
	cmd := exec.Command(os.Args[0], "-test.run=^$", "--", "mcp", "-data", data, "-policies", "../../policies.yaml")
	cmd.Env = append(childEnv("BOT_OPERATORS=100", "BOT_APPROVERS=100"), env...)
	stderr := &bytes.Buffer{}
	cmd.Stderr = stderr
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	cs, err := sdk.NewClient(&sdk.Implementation{Name: "test-agent", Version: "v0"}, nil).Connect(ctx, &sdk.CommandTransport{Command: cmd}, nil)
	if err != nil {
		t.Fatalf("countersign mcp: %v\n%s", err, stderr)
	}
	t.Cleanup(func() { cs.Close() })
	return cs, stderr
}

func callTool(t *testing.T, cs *sdk.ClientSession, name string, args map[string]any) (*sdk.CallToolResult, action.Result) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	res, err := cs.CallTool(ctx, &sdk.CallToolParams{Name: name, Arguments: args})
	if err != nil {
		t.Fatalf("%s: %v", name, err)
	}
	var r action.Result
	b, _ := json.Marshal(res.StructuredContent)
	json.Unmarshal(b, &r)
	return res, r
}

// A stdio countersign mcp with no bot running says so at start, and its commits say so
// too, creating nothing that a bot started later could send without the person
// knowing; what needs no bot (a draft) works.
func TestMCPWithNoBotRunningSaysSo(t *testing.T) {
	if testing.Short() {
		t.Skip("starts child processes")
	}
	data := filepath.Join(t.TempDir(), "data")
	cs, stderr := mcpChild(t, data)
	_, draft := callTool(t, cs, "prepare_reply", map[string]any{"text": "a draft needs no bot"})
	if draft.Status != action.StatusSucceeded {
		t.Errorf("prepare_reply = %+v, want a draft", draft)
	}
	res, r := callTool(t, cs, "commit_send_message", map[string]any{"chat_id": "222", "text": "nobody would send this"})
	if r.Status != action.StatusTerminal || r.NextAction != action.NextStop || r.OperationID != "" || r.Cause != action.CauseNoSender || res.IsError {
		t.Errorf("commit with no bot = %+v (%v), want a terminal stop saying no bot runs and no operation", r, res.Content)
	}
	cs.Close()
	if !strings.Contains(stderr.String(), "countersign mcp: Known: no bot is running on this data folder") {
		t.Errorf("stderr does not say that no bot runs:\n%s", stderr)
	}
	j, err := journal.Open(context.Background(), filepath.Join(data, "journal.db"))
	if err != nil {
		t.Fatal(err)
	}
	defer j.Close()
	ops, _ := j.Operations(context.Background(), journal.Filter{})
	for _, op := range ops {
		if op.Tool != "prepare_reply" {
			t.Errorf("%s of %s journaled with no bot to send it, want nothing", op.ID, op.Tool)
		}
	}
}

// With no approver in the policy, countersign mcp and countersign run -mcp-listen refuse to
// start, saying why, instead of taking commits nobody can approve.
func TestMCPNeedsAnApprover(t *testing.T) {
	policies := filepath.Join(t.TempDir(), "p.yaml")
	b, _ := os.ReadFile("../../policies.yaml")
	os.WriteFile(policies, b, 0o600)
	for _, args := range [][]string{
		{"mcp", "-data", t.TempDir(), "-policies", policies},
		{"run", "-mcp-listen", "127.0.0.1:0", "-data", t.TempDir(), "-policies", policies},
	} {
		r := runMain(t, "", map[string]string{"TELEGRAM_BOT_TOKEN": childToken, "TELEGRAM_API_URL": "http://127.0.0.1:1"}, args...)
		if r.code != 1 || !strings.Contains(r.stderr, "no approvers") {
			t.Errorf("bot %v: exit %d, stderr %q; want 1 and no approvers named", args[:2], r.code, r.stderr)
		}
	}
}

// bearerAuth sets the bearer token on every request.
type bearerAuth struct{ token string }

func (b bearerAuth) RoundTrip(req *http.Request) (*http.Response, error) {
	req = req.Clone(req.Context())
	req.Header.Set("Authorization", "Bearer "+b.token)
	return http.DefaultTransport.RoundTrip(req)
}

// waitLog waits for a line of the bot's log that matches re and returns its
// first group.
func waitLog(t testing.TB, logs func() string, re *regexp.Regexp) string {
	t.Helper()
	deadline := time.Now().Add(20 * time.Second)
	for time.Now().Before(deadline) {
		if m := re.FindStringSubmatch(logs()); m != nil {
			return m[1]
		}
		time.Sleep(20 * time.Millisecond) // reading a file another process writes
	}
	t.Fatalf("no log line matching %s:\n%s", re, logs())
	return ""
}

// countersign run -mcp-listen serves the tools from the process that sends: a request
// without the bearer token gets 401; an agent's commit waits for the tap on the
// approver's card in Telegram, is delivered once along the recorded path, and
// await_outcome reports it; the token is in no log line.
func TestMCPListenInTheBot(t *testing.T) {
	t.Parallel()
	if testing.Short() {
		t.Skip("starts child processes")
	}
	const mcpToken = "countersign-mcp-4b1d9e07a6c35f28"
	srv := telegramtest.NewServer(t, telegramtest.Options{Token: childToken})
	data, logs, wait := childData(t, srv)
	bot := startBotWith(t, srv, data, []string{"COUNTERSIGN_MCP_TOKEN=" + mcpToken}, "-mcp-listen", "127.0.0.1:0")
	addr := waitLog(t, logs, regexp.MustCompile(`msg="MCP server listening"[^\n]* addr=(\S+)`))
	url := "http://" + addr + "/mcp"

	resp, err := http.Post(url, "application/json", strings.NewReader(`{"jsonrpc":"2.0","id":1,"method":"tools/list"}`))
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusUnauthorized {
		t.Errorf("without the token: status %d, want 401", resp.StatusCode)
	}

	ctx, cancel := context.WithTimeout(context.Background(), 40*time.Second)
	defer cancel()
	cs, err := sdk.NewClient(&sdk.Implementation{Name: "test-agent", Version: "v0"}, nil).Connect(ctx,
		&sdk.StreamableClientTransport{Endpoint: url, HTTPClient: &http.Client{Transport: bearerAuth{mcpToken}}}, nil)
	if err != nil {
		t.Fatalf("connect: %v\n%s", err, logs())
	}
	defer cs.Close()
	_, sent := callTool(t, cs, "commit_send_message", map[string]any{"chat_id": "222", "text": "an agent's send, tapped"})
	if sent.Status != action.StatusPending || sent.OperationID == "" {
		t.Fatalf("commit = %+v, want pending with an operation id", sent)
	}
	card := approveCard(srv, wait)
	if !strings.Contains(card.Text, sent.OperationID) {
		t.Errorf("the card does not name %s:\n%s", sent.OperationID, card.Text)
	}
	_, got := callTool(t, cs, "await_outcome", map[string]any{"operation_id": sent.OperationID, "timeout_s": 20})
	if got.Status != action.StatusSucceeded || got.SideEffect != action.SideEffectCommitted || got.Evidence == nil || len(got.Evidence.MessageIDs) != 1 {
		t.Errorf("await = %+v, want committed with its message id", got)
	}
	bot.Process.Signal(syscall.SIGTERM)
	bot.Wait()
	if n := len(srv.CallsTo("sendMessage")) - len(srv.Messages(100)); n != 1 || len(srv.Messages(222)) != 1 {
		t.Errorf("%d sends to 222 (%d delivered), want exactly one", n, len(srv.Messages(222)))
	}
	assertPath(t, filepath.Join(data, "journal.db"), sent.OperationID, journal.Prepared, journal.Verified, journal.AwaitingApproval,
		journal.Approved, journal.Committing, journal.Committed)
	// Made by the bot, the payload names the chat it reaches, read again
	// before the send.
	if a := payloadOf(t, filepath.Join(data, "journal.db"), sent.OperationID).Audience; a == nil || *a != (action.Audience{Name: "User", Username: "user222", Type: "private"}) {
		t.Errorf("the payload's audience = %+v, want the chat as getChat names it", a)
	}
	if strings.Contains(logs(), mcpToken) {
		t.Errorf("the bearer token is in the bot's log:\n%s", logs())
	}
}

// payloadOf is the payload of operation opID, from the journal.
func payloadOf(t *testing.T, journalPath, opID string) action.Payload {
	t.Helper()
	j, err := journal.Open(context.Background(), journalPath)
	if err != nil {
		t.Fatal(err)
	}
	defer j.Close()
	op, err := j.Operation(context.Background(), opID)
	if err != nil {
		t.Fatal(err)
	}
	return op.Payload
}

// assertPath checks the states an operation went through, from the journal.
func assertPath(t *testing.T, journalPath, opID string, want ...journal.State) {
	t.Helper()
	j, err := journal.Open(context.Background(), journalPath)
	if err != nil {
		t.Fatal(err)
	}
	defer j.Close()
	ts, err := j.Transitions(context.Background(), opID)
	if err != nil {
		t.Fatal(err)
	}
	var got []journal.State
	for _, tr := range ts {
		got = append(got, tr.To)
	}
	if !slices.Equal(got, want) {
		t.Errorf("path of %s = %v, want %v", opID, got, want)
	}
}

// A stdio countersign mcp beside a running bot makes operations that the bot shows and
// sends: the card reaches the approver's phone, the tap delivers once along the
// recorded path, and await_outcome in the other process reports it. A send whose
// answer was lost is unknown, its envelope a resource of countersign mcp, and
// request_verification has the bot ask the approver, resolving nothing.
func TestMCPBesideARunningBot(t *testing.T) {
	t.Parallel()
	if testing.Short() {
		t.Skip("starts child processes")
	}
	srv := telegramtest.NewServer(t, telegramtest.Options{Token: childToken})
	srv.Inject(telegramtest.AcceptThenDrop().For("sendMessage").InChat(222).OnCall(2))
	data, logs, wait := childData(t, srv)
	bot := startBot(t, srv, data)
	wait("the first poll", func(s *telegramtest.Server) bool { return s.Polling() })
	cs, stderr := mcpChild(t, data)

	asked := time.Now()
	_, sent := callTool(t, cs, "commit_send_message", map[string]any{"chat_id": "222", "text": "asked on stdio, sent by the bot"})
	if sent.Status != action.StatusPending || sent.OperationID == "" {
		t.Fatalf("commit = %+v, want pending with an operation id", sent)
	}
	card := approveCard(srv, wait)
	t.Logf("the card of a stdio commit reached the phone %s after the call", time.Since(asked).Round(time.Millisecond))
	tapped := time.Now()
	if !strings.Contains(card.Text, sent.OperationID) {
		t.Errorf("the card does not name %s:\n%s", sent.OperationID, card.Text)
	}
	_, got := callTool(t, cs, "await_outcome", map[string]any{"operation_id": sent.OperationID, "timeout_s": 20})
	if got.Status != action.StatusSucceeded || got.SideEffect != action.SideEffectCommitted {
		t.Errorf("await = %+v, want committed\nbot log:\n%s", got, logs())
	}
	t.Logf("await_outcome reported the delivery %s after the tap", time.Since(tapped).Round(time.Millisecond))

	_, lost := callTool(t, cs, "commit_send_message", map[string]any{"chat_id": "222", "text": "accepted, its answer lost"})
	approveCard(srv, wait)
	_, got = callTool(t, cs, "await_outcome", map[string]any{"operation_id": lost.OperationID, "timeout_s": 20})
	if got.SideEffect != action.SideEffectUnknown || got.NextAction != action.NextVerify {
		t.Fatalf("await = %+v, want unknown, verify\nbot log:\n%s", got, logs())
	}
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	rr, err := cs.ReadResource(ctx, &sdk.ReadResourceParams{URI: "countersign://envelopes/" + lost.OperationID})
	if err != nil || !strings.Contains(rr.Contents[0].Text, "status: unknown") {
		t.Fatalf("envelope resource: %v %v", err, rr)
	}
	if res, _ := callTool(t, cs, "request_verification", map[string]any{"operation_id": lost.OperationID}); res.IsError {
		t.Fatalf("request_verification: %v", res.Content)
	}
	questions := func(s *telegramtest.Server) int {
		n := 0
		for _, m := range s.Messages(100) {
			if strings.Contains(string(m.ReplyMarkup), "rs1:"+lost.OperationID) {
				n++
			}
		}
		return n
	}
	wait("the question to the approver", func(s *telegramtest.Server) bool { return questions(s) > 0 })
	// Asked again from this process, the request is the one the bot showed:
	// nothing more is recorded for its sweep to show.
	if res, again := callTool(t, cs, "request_verification", map[string]any{"operation_id": lost.OperationID}); res.IsError || !strings.Contains(again.Reason, "already asked") {
		t.Errorf("request_verification again = %+v, want already asked", again)
	}

	cs.Close()
	bot.Process.Signal(syscall.SIGTERM)
	bot.Wait()
	if n := questions(srv); n != 1 {
		t.Errorf("%d questions to verify %s, want 1", n, lost.OperationID)
	}
	if len(srv.Messages(222)) != 2 {
		t.Errorf("%d messages in 222, want 2 (each sent once)", len(srv.Messages(222)))
	}
	if strings.Contains(stderr.String(), "no bot is running") {
		t.Errorf("countersign mcp took the running bot for none:\n%s", stderr)
	}
	jp := filepath.Join(data, "journal.db")
	assertPath(t, jp, sent.OperationID, journal.Prepared, journal.Verified, journal.AwaitingApproval, journal.Approved, journal.Committing, journal.Committed)
	assertPath(t, jp, lost.OperationID, journal.Prepared, journal.Verified, journal.AwaitingApproval, journal.Approved, journal.Committing, journal.Unknown)
	// This process holds no bot token (an agent's process never can send):
	// it names no audience, and the card read the chat when it was shown.
	if a := payloadOf(t, jp, sent.OperationID).Audience; a != nil {
		t.Errorf("a stdio commit's audience = %+v, want none", a)
	}
}
