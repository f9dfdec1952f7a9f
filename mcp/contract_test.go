package mcp_test

import (
	"context"
	"encoding/json"
	"errors"
	"slices"
	"strings"
	"testing"

	sdk "github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/countersign/countersign/action"
	"github.com/countersign/countersign/journal"
	"github.com/countersign/countersign/mcp"
	"github.com/countersign/countersign/policy"
	"github.com/countersign/countersign/tools"
)

// The server offers exactly the policy's tools and the follow-up tools, each
// with its JSON Schema, and says what pending, unknown and verify mean.
func TestToolsAndInstructions(t *testing.T) {
	t.Parallel()
	r := newRig(t, nil)
	for _, how := range transports {
		t.Run(how, func(t *testing.T) {
			cs := r.connect(t, how, nil)
			if got := cs.InitializeResult().Instructions; got != mcp.Instructions || strings.Count(got, ". ") != 2 {
				t.Errorf("instructions = %q, want the three sentences", got)
			}
			res, err := cs.ListTools(context.Background(), nil)
			if err != nil {
				t.Fatal(err)
			}
			schemas := map[string]string{}
			var names []string
			for _, tool := range res.Tools {
				names = append(names, tool.Name)
				b, _ := json.Marshal(map[string]any{"in": tool.InputSchema, "out": tool.OutputSchema})
				schemas[tool.Name] = string(b)
			}
			want := []string{"await_outcome", "commit_publish_post", "commit_send_message", "get_operation", "list_envelopes",
				"list_pending", "prepare_reply", "read_envelope", "request_verification"}
			slices.Sort(names)
			if !slices.Equal(names, want) {
				t.Fatalf("tools = %v, want %v", names, want)
			}
			for name, want := range map[string][]string{
				"commit_send_message": {`"required":["chat_id","text"]`, `"parse_mode"`, `"out":{`, `"status"`, `"operation_id"`, `"side_effect"`, `"next_action"`,
					`"enum":["succeeded","retryable","repairable","terminal","pending"]`, `"retry_after_ms"`},
				"await_outcome":  {`"operation_id"`, `"timeout_s"`, `"required":["operation_id"]`, `"evidence"`},
				"list_envelopes": {`"unresolved"`, `"target"`, `"older_than"`},
			} {
				for _, w := range want {
					if !strings.Contains(schemas[name], w) {
						t.Errorf("%s schema lacks %s:\n%s", name, w, schemas[name])
					}
				}
			}
		})
	}
}

// Every result is the contract with one readable line; a commit comes back
// pending with its operation id at once, and the follow-up tools see it. One
// session is one task, with Surface mcp and no chat; another session is another.
func TestEveryResultIsTheContract(t *testing.T) {
	t.Parallel()
	r := newRig(t, nil)
	for _, how := range transports {
		t.Run(how, func(t *testing.T) {
			cs := r.connect(t, how, nil)
			res, draft := call(t, cs, "prepare_reply", map[string]any{"text": "a draft over " + how})
			assertContract(t, "prepare_reply", res, draft)
			if draft.Status != action.StatusSucceeded || draft.SideEffect != action.SideEffectNone || draft.Draft == "" {
				t.Errorf("prepare_reply = %+v, want a succeeded draft", draft)
			}
			res, sent := call(t, cs, "commit_send_message", map[string]any{"chat_id": "222", "text": "held for a tap over " + how})
			assertContract(t, "commit_send_message", res, sent)
			if sent.Status != action.StatusPending || sent.NextAction != action.NextAwaitApproval || res.IsError {
				t.Fatalf("commit = %+v, want pending at once", sent)
			}
			for tool, args := range map[string]map[string]any{"get_operation": {"operation_id": sent.OperationID},
				"await_outcome": {"operation_id": sent.OperationID, "timeout_s": 1}} {
				res, got := call(t, cs, tool, args)
				assertContract(t, tool, res, got)
				if got.Status != action.StatusPending || got.OperationID != sent.OperationID {
					t.Errorf("%s = %+v, want it pending", tool, got)
				}
				if tool == "await_outcome" && !strings.Contains(got.Reason, "still awaiting_approval after 1s; call await_outcome again") {
					t.Errorf("await_outcome's bound ran out saying %q, want what to do", got.Reason)
				}
			}
			res, _ = call(t, cs, "request_verification", map[string]any{"operation_id": sent.OperationID})
			if !res.IsError || !strings.Contains(text(res), "not unknown: there is nothing to verify") {
				t.Errorf("request_verification of a pending commit = %q (isError %v), want a refusal", text(res), res.IsError)
			}
			res, _ = call(t, cs, "get_operation", map[string]any{"operation_id": "op-nosuch"})
			if !res.IsError || !strings.Contains(text(res), `no operation "op-nosuch"`) {
				t.Errorf("get_operation of no operation = %q, want a plain error", text(res))
			}
			res, _ = call(t, cs, "list_pending", nil)
			var pending mcp.PendingOut
			decode(t, res, &pending)
			if !slices.ContainsFunc(pending.Operations, func(v journal.View) bool { return v.ID == sent.OperationID && v.State == journal.AwaitingApproval }) {
				t.Errorf("list_pending = %+v, want %s awaiting approval", pending, sent.OperationID)
			}

			ctx := context.Background()
			a, _ := r.j.Operation(ctx, draft.OperationID)
			b, _ := r.j.Operation(ctx, sent.OperationID)
			task, err := r.j.Task(ctx, a.TaskID)
			switch {
			case err != nil:
				t.Fatal(err)
			case a.TaskID != b.TaskID:
				t.Errorf("one session made tasks %s and %s, want one", a.TaskID, b.TaskID)
			case task.Surface != mcp.Surface || task.Chat != "" || task.Requester != 0 || !strings.HasPrefix(task.Summary, "MCP session of test-agent") ||
				b.Surface != mcp.Surface || b.Transport != "telegram":
				t.Errorf("task %+v, operation surface %q transport %q; want surface mcp, no chat, requester 0, delivered by telegram", task, b.Surface, b.Transport)
			}
			other := r.connect(t, how, nil)
			_, d2 := call(t, other, "prepare_reply", map[string]any{"text": "another session"})
			if c, _ := r.j.Operation(ctx, d2.OperationID); c.TaskID == a.TaskID {
				t.Errorf("a second session ran in the first one's task %s", a.TaskID)
			}
		})
	}
}

// decode reads a result's structured content into v.
func decode(t *testing.T, res *sdk.CallToolResult, v any) {
	t.Helper()
	if res.IsError {
		t.Fatalf("tool error: %s", text(res))
	}
	b, _ := json.Marshal(res.StructuredContent)
	if err := json.Unmarshal(b, v); err != nil {
		t.Fatalf("structured content %s: %v", b, err)
	}
}

// With nobody to approve, the server does not start: every commit would wait
// for a tap that cannot come.
func TestNoApproverNoServer(t *testing.T) {
	t.Parallel()
	r := newRig(t, nil)
	p := testPolicy(t, func(p *policy.Policy) { p.Access.Approvers = nil })
	reg, err := tools.NewRegistry(p, nil)
	if err != nil {
		t.Fatal(err)
	}
	_, err = mcp.New(mcp.Options{Operator: r.op, Journal: r.j, Vault: r.v, Tools: reg, Policy: p})
	if !errors.Is(err, mcp.ErrNoApprovers) || !strings.Contains(err.Error(), "BOT_APPROVERS") {
		t.Errorf("New without approvers = %v, want ErrNoApprovers saying how to set them", err)
	}
}

// A call the journal has no room for is answered as the contract, not as a
// protocol error carrying the journal's words: retryable, nothing sent, with
// what to do; and nothing reaches Telegram.
func TestAFullDiskIsAnsweredAsTheContract(t *testing.T) {
	t.Parallel()
	r := newRigWith(t, nil, journal.WithSizeLimit(1)) // the journal frozen at its size
	for _, how := range transports {
		t.Run(how, func(t *testing.T) {
			cs := r.connect(t, how, nil)
			res, got := call(t, cs, "commit_send_message", map[string]any{"chat_id": "222",
				"text": strings.Repeat("Квартальные цифры готовы. ", 120)}) // over a page; no operation id: none was stored
			if !res.IsError || got.Status != action.StatusRetryable || got.SideEffect != action.SideEffectNone ||
				got.NextAction != action.NextRetry || got.RetryAfterMS <= 0 || got.Cause != action.CauseDiskFull {
				t.Errorf("commit on a full disk = %+v (isError %v), want retryable, nothing sent, with a wait", got, res.IsError)
			}
			if strings.Contains(text(res), "database or disk is full") || strings.Contains(text(res), "journal:") {
				t.Errorf("the agent was handed the journal's own words: %q", text(res))
			}
		})
	}
	if n := len(r.tg.CallsTo("sendMessage")); n != 0 {
		t.Errorf("sendMessage calls = %d, want none", n)
	}
}
