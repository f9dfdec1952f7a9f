package main

import (
	"bytes"
	"context"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	sdk "github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/countersign/countersign/journal"
	"github.com/countersign/countersign/tools"
)

// mcpChild starts "bot mcp" on data in a child process and connects an MCP
// client to it over stdio; stderr collects what the child says.
func mcpChild(t *testing.T, data string, env ...string) (*sdk.ClientSession, *bytes.Buffer) {
	t.Helper()
	cmd := exec.Command(os.Args[0], "-test.run=^$", "--", "mcp", "-data", data, "-policies", "../../policies.yaml")
	cmd.Env = append(append(os.Environ(), "COUNTERSIGN_CHILD=1", "BOT_OPERATORS=100", "BOT_APPROVERS=100"), env...)
	stderr := &bytes.Buffer{}
	cmd.Stderr = stderr
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	cs, err := sdk.NewClient(&sdk.Implementation{Name: "test-agent", Version: "v0"}, nil).Connect(ctx, &sdk.CommandTransport{Command: cmd}, nil)
	if err != nil {
		t.Fatalf("bot mcp: %v\n%s", err, stderr)
	}
	t.Cleanup(func() { cs.Close() })
	return cs, stderr
}

func callTool(t *testing.T, cs *sdk.ClientSession, name string, args map[string]any) (*sdk.CallToolResult, tools.Result) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	res, err := cs.CallTool(ctx, &sdk.CallToolParams{Name: name, Arguments: args})
	if err != nil {
		t.Fatalf("%s: %v", name, err)
	}
	var r tools.Result
	b, _ := json.Marshal(res.StructuredContent)
	json.Unmarshal(b, &r)
	return res, r
}

// A stdio bot mcp with no bot running says so at start, and its commits say so
// too, creating nothing that a bot started later could send without the person
// knowing; what needs no bot (a draft) works.
func TestMCPWithNoBotRunningSaysSo(t *testing.T) {
	if testing.Short() {
		t.Skip("starts child processes")
	}
	data := filepath.Join(t.TempDir(), "data")
	cs, stderr := mcpChild(t, data)
	_, draft := callTool(t, cs, "prepare_reply", map[string]any{"text": "a draft needs no bot"})
	if draft.Status != tools.StatusSucceeded {
		t.Errorf("prepare_reply = %+v, want a draft", draft)
	}
	res, r := callTool(t, cs, "commit_send_message", map[string]any{"chat_id": "222", "text": "nobody would send this"})
	if r.Status != tools.StatusTerminal || r.NextAction != tools.NextStop || r.OperationID != "" || !strings.Contains(r.Reason, "no bot is running") || res.IsError {
		t.Errorf("commit with no bot = %+v (%v), want a terminal stop saying no bot runs and no operation", r, res.Content)
	}
	cs.Close()
	if !strings.Contains(stderr.String(), "bot mcp: Known: no bot is running on this data folder") {
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

// With no approver in the policy, bot mcp and bot run -mcp-listen refuse to
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
