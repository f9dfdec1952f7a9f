package operator_test

import (
	"context"
	"os"
	"regexp"
	"strings"
	"testing"

	"github.com/countersign/countersign/action"
	"github.com/countersign/countersign/policy"
)

// loopGuardBlock is the loop_guard key of policies.yaml with its indented lines.
var loopGuardBlock = regexp.MustCompile(`(?m)^loop_guard:.*\n(?:[ \t]+.*\n)*`)

// withLoopGuard gives the harness the default policy with loop_guard written as
// yaml, and a repair budget large enough that only the guard stops a call.
func withLoopGuard(t *testing.T, h *harness, yaml string, autoApprove ...string) {
	t.Helper()
	src, err := os.ReadFile("../policies.yaml")
	if err != nil {
		t.Fatal(err)
	}
	if !loopGuardBlock.Match(src) {
		t.Fatal("policies.yaml has no loop_guard key to replace")
	}
	text := loopGuardBlock.ReplaceAllLiteralString(string(src), yaml+"\n")
	text = strings.Replace(text, "repair_budget: 1 ", "repair_budget: 10 ", 1)
	p, err := policy.Parse(strings.NewReader(text))
	if err != nil {
		t.Fatalf("policy with %q: %v", yaml, err)
	}
	p.Access = h.pol.Access
	if len(autoApprove) > 0 {
		p.AutoApprove = []policy.AutoApprove{policyRule("commit_send_message", autoApprove...)}
	}
	h.pol = p
	h.open()
}

// wantDoomLoop fails the test unless r is the guard's stop naming the call.
func wantDoomLoop(t *testing.T, r action.Result, err error, names ...string) {
	t.Helper()
	if err != nil {
		t.Fatal(err)
	}
	if r.Cause != action.CauseDoomLoop || r.Status != action.StatusTerminal || !strings.HasPrefix(r.Reason, "possible doom loop: ") {
		t.Fatalf("result = %+v, want a terminal stop beginning %q", r, "possible doom loop: ")
	}
	for _, n := range names {
		if !strings.Contains(r.Reason, n) {
			t.Errorf("reason = %q, want it to name %q", r.Reason, n)
		}
	}
}

// TestLoopGuardReadsTheCallAsTheToolDoes: refused arguments sent again, spelt
// another way (keys reordered, a null option, a key the tool ignores), are the
// same call; the stop names it.
func TestLoopGuardReadsTheCallAsTheToolDoes(t *testing.T) {
	t.Parallel()
	h := newHarness(t)
	ctx := context.Background()
	taskID := newTask(t, h)
	r, _ := h.op.Call(ctx, taskID, rawCall("commit_send_message", `{"chat_id":"the team","text":"hello"}`))
	if r.Status != action.StatusRepairable {
		t.Fatalf("first = %+v, want repairable", r)
	}
	r, err := h.op.Call(ctx, taskID, rawCall("commit_send_message", `{"text":"hello","chat_id":"the team","parse_mode":null,"silent":true}`))
	wantDoomLoop(t, r, err, `commit_send_message(chat_id: "the team", text: "hello")`, "not a chat id", "op-")
}

// TestLoopGuardStopsARepeatedVerifierRepair: the call the verifier sent back for
// repair, sent again with chat_id as a number, is the same call: a loop, not a
// second repair.
func TestLoopGuardStopsARepeatedVerifierRepair(t *testing.T) {
	t.Parallel()
	h := verifying(t)
	ctx := context.Background()
	taskID := newTask(t, h)
	first, _ := h.op.Call(ctx, taskID, rawCall("commit_send_message", `{"chat_id":"222","text":"Read more at https://example.com/post"}`))
	if first.Status != action.StatusRepairable {
		t.Fatalf("first = %+v, want repairable", first)
	}
	r, err := h.op.Call(ctx, taskID, rawCall("commit_send_message", `{"chat_id":222,"text":"Read more at https://example.com/post"}`))
	wantDoomLoop(t, r, err, "commit_send_message(", `chat_id: "222"`, "repair", first.OperationID)
}

// TestLoopGuardStopsARepeatWhileTheOutcomeIsUnknown: never a second send while the
// first may have arrived; the stop says how to find out.
func TestLoopGuardStopsARepeatWhileTheOutcomeIsUnknown(t *testing.T) {
	t.Parallel()
	h := newHarness(t, unknown)
	withLoopGuard(t, h, "loop_guard: {failures: 3}", "222")
	ctx := context.Background()
	taskID := newTask(t, h)
	first, _ := h.op.Call(ctx, taskID, callSend("222", "hello"))
	if first.SideEffect != action.SideEffectUnknown {
		t.Fatalf("first = %+v, want an unknown outcome", first)
	}
	r, err := h.op.Call(ctx, taskID, rawCall("commit_send_message", `{"chat_id":222,"text":"hello"}`))
	wantDoomLoop(t, r, err, "commit_send_message(", first.OperationID, "/resolve "+first.OperationID)
	if n := len(h.sender.Sent()); n != 1 {
		t.Errorf("sends = %d, want 1", n)
	}
}

// TestLoopGuardCountsFailures: with failures: 2, the same failed call may run once
// more; the third is a loop.
func TestLoopGuardCountsFailures(t *testing.T) {
	t.Parallel()
	h := newHarness(t, blocked)
	withLoopGuard(t, h, "loop_guard: {failures: 2}", "222")
	ctx := context.Background()
	taskID := newTask(t, h)
	for i := range 2 {
		if r, _ := h.op.Call(ctx, taskID, callSend("222", "hello")); r.NextAction != action.NextStop || r.Cause == action.CauseDoomLoop {
			t.Fatalf("call %d = %+v, want the sender's refusal", i+1, r)
		}
	}
	r, err := h.op.Call(ctx, taskID, callSend("222", "hello"))
	wantDoomLoop(t, r, err, `commit_send_message(chat_id: "222", text: "hello")`, "failed 2 times")
	if n := len(h.sender.Sent()); n != 2 {
		t.Errorf("sends = %d, want 2", n)
	}
}

// TestLoopGuardStopsARepairIdenticalToTheCall: a repair that sends the very
// arguments it was asked to repair stops, whatever failures allows.
func TestLoopGuardStopsARepairIdenticalToTheCall(t *testing.T) {
	t.Parallel()
	h := newHarness(t)
	withLoopGuard(t, h, "loop_guard: {failures: 5}")
	ctx := context.Background()
	taskID := newTask(t, h)
	first, _ := h.op.Call(ctx, taskID, rawCall("prepare_reply", `{"text":"  "}`))
	if first.Status != action.StatusRepairable {
		t.Fatalf("first = %+v, want repairable", first)
	}
	r, err := h.op.Call(ctx, taskID, rawCall("prepare_reply", `{"text":"  ","tone":"warm"}`))
	wantDoomLoop(t, r, err, `prepare_reply(text: "  ")`, "the repair of "+first.OperationID, "unchanged")
}

// TestLoopGuardStopsAPingPong: two different calls alternating, each failing,
// stop on the call that would complete ping_pong rounds, even where failures
// alone would let each run again.
func TestLoopGuardStopsAPingPong(t *testing.T) {
	t.Parallel()
	h := newHarness(t, blocked)
	withLoopGuard(t, h, "loop_guard:\n  failures: 3\n  ping_pong: 2", "222", "333")
	ctx := context.Background()
	taskID := newTask(t, h)
	var ids []string
	for _, chat := range []string{"222", "333", "222"} {
		r, _ := h.op.Call(ctx, taskID, callSend(chat, "hello"))
		if r.NextAction != action.NextStop || r.Cause == action.CauseDoomLoop {
			t.Fatalf("call to %s = %+v, want the sender's refusal", chat, r)
		}
		ids = append(ids, r.OperationID)
	}
	r, err := h.op.Call(ctx, taskID, callSend("333", "hello"))
	wantDoomLoop(t, r, err, `commit_send_message(chat_id: "333", text: "hello")`, "alternating", ids[2], "2 rounds")
	if n := len(h.sender.Sent()); n != 3 {
		t.Errorf("sends = %d, want 3", n)
	}
	// A call that breaks the pattern is not a ping-pong.
	if r, _ := h.op.Call(ctx, taskID, callSend("222", "hello again")); r.Cause == action.CauseDoomLoop {
		t.Errorf("a new call = %+v, want it run", r)
	}
}

// TestLoopGuardOffRunsEveryCall: loop_guard: false, kept from before the mapping,
// still turns the guard off.
func TestLoopGuardOffRunsEveryCall(t *testing.T) {
	t.Parallel()
	h := newHarness(t)
	withLoopGuard(t, h, "loop_guard: false")
	ctx := context.Background()
	taskID := newTask(t, h)
	for i := range 2 {
		r, _ := h.op.Call(ctx, taskID, rawCall("commit_send_message", `{"chat_id":"the team","text":"hello"}`))
		if r.Cause == action.CauseDoomLoop {
			t.Fatalf("call %d = %+v, want no loop guard", i+1, r)
		}
	}
}

// TestLoopGuardNeverQuotesASecret: the stop names the call, never a token in it.
func TestLoopGuardNeverQuotesASecret(t *testing.T) {
	t.Parallel()
	h := newHarness(t)
	ctx := context.Background()
	taskID := newTask(t, h)
	const token = "123456789:AAHdqTcvCH1vGWJxfSeofSAs0K5PALDsaw1"
	args := `{"chat_id":"222","text":"the token is ` + token + `"}`
	h.op.Call(ctx, taskID, rawCall("commit_send_message", args))
	r, err := h.op.Call(ctx, taskID, rawCall("commit_send_message", args))
	wantDoomLoop(t, r, err, `chat_id: "222"`)
	if strings.Contains(r.Reason, "AAHdqTcv") {
		t.Errorf("reason = %q quotes the token", r.Reason)
	}
	op, _ := h.j.Operation(ctx, r.OperationID)
	if op.Result == nil || strings.Contains(op.Result.Reason, "AAHdqTcv") {
		t.Errorf("journaled result = %+v, want it without the token", op.Result)
	}
}

// TestLoopGuardStopsARepeatedSuccessfulCall: the same call made again after it
// went through (a draft made, a send asked for) is a loop too, not only after
// it failed: the repeat stops, naming the call and the earlier operation, and
// nothing more is sent.
func TestLoopGuardStopsARepeatedSuccessfulCall(t *testing.T) {
	t.Parallel()
	for _, tt := range []struct{ name, tool, args, names string }{
		{"a draft", "prepare_reply", `{"text":"Hi all"}`, `prepare_reply(text: "Hi all")`},
		{"an auto-approved send", "commit_send_message", `{"chat_id":"222","text":"hello"}`, `commit_send_message(chat_id: "222", text: "hello")`},
	} {
		t.Run(tt.name, func(t *testing.T) {
			h := newHarness(t)
			withLoopGuard(t, h, "loop_guard: true", "222")
			ctx := context.Background()
			taskID := newTask(t, h)
			first, err := h.op.Call(ctx, taskID, rawCall(tt.tool, tt.args))
			if err != nil || first.Status != action.StatusSucceeded {
				t.Fatalf("first = %+v (%v), want it succeeded", first, err)
			}
			r, err := h.op.Call(ctx, taskID, rawCall(tt.tool, tt.args))
			wantDoomLoop(t, r, err, tt.names, "went through as "+first.OperationID)
			if n := len(h.sender.Sent()); tt.tool == "commit_send_message" && n != 1 {
				t.Errorf("sends = %d, want 1", n)
			}
		})
	}
}
