package agent_test

import (
	"context"
	"errors"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/countersign/countersign/action"
	"github.com/countersign/countersign/agent"
	"github.com/countersign/countersign/envelope"
	"github.com/countersign/countersign/journal"
	"github.com/countersign/countersign/model"
	"github.com/countersign/countersign/policy"
	"github.com/countersign/countersign/vault"
	"github.com/countersign/countersign/verifier"
)

var payload = verifier.Input{Tool: "commit_send_message", Action: "send_message", Target: "222", Text: "Digest for Monday"}

func says(text string) answer {
	return answer{Res: model.Response{Text: text, Stop: model.StopEndTurn}}
}

func calls(names ...string) answer {
	var cs []model.ToolCall
	for i, n := range names {
		cs = append(cs, model.ToolCall{ID: "call_" + string(rune('a'+i)), Name: n, Input: []byte(`{}`)})
	}
	return answer{Res: model.Response{ToolCalls: cs, Stop: model.StopToolUse}}
}

func TestReviewerAnswers(t *testing.T) {
	tests := []struct {
		name       string
		answer     string
		want       verifier.Decision
		wantReason string
	}{
		{"pass", `{"decision":"pass","reasons":[]}`, verifier.Pass, ""},
		{"pass without reasons", `{"decision":"pass"}`, verifier.Pass, ""},
		{"repair with reasons", `{"decision":"repair","reasons":["say which Monday","fix the typo"]}`, verifier.Repair, "say which Monday; fix the typo"},
		{"stop in a json fence", "```json\n{\"decision\":\"stop\",\"reasons\":[\"sent an hour ago\"]}\n```", verifier.Stop, "sent an hour ago"},
		{"prose", "Looks good to me, pass.", verifier.Stop, agent.NotUnderstood},
		{"prose around json", `Sure: {"decision":"pass","reasons":[]}`, verifier.Stop, agent.NotUnderstood},
		{"text after json", `{"decision":"pass","reasons":[]} thanks`, verifier.Stop, agent.NotUnderstood},
		{"unknown decision", `{"decision":"approve","reasons":["fine"]}`, verifier.Stop, agent.NotUnderstood},
		{"unknown key", `{"decision":"pass","reasons":[],"confidence":0.9}`, verifier.Stop, agent.NotUnderstood},
		{"repair without reasons", `{"decision":"repair","reasons":[]}`, verifier.Stop, agent.NotUnderstood},
		{"stop with a blank reason", `{"decision":"stop","reasons":["  "]}`, verifier.Stop, agent.NotUnderstood},
		{"no decision", `{"reasons":["x"]}`, verifier.Stop, agent.NotUnderstood},
		{"other fence", "```\n{\"decision\":\"pass\",\"reasons\":[]}\n```", verifier.Stop, agent.NotUnderstood},
		{"empty", "", verifier.Stop, agent.NotUnderstood},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			p := &script{Answers: []answer{says(tt.answer)}}
			d, reason, err := agent.NewReviewer(p, "m", nil, nil).Review(context.Background(), payload)
			if err != nil {
				t.Fatal(err)
			}
			if d != tt.want || reason != tt.wantReason {
				t.Errorf("got %s %q, want %s %q", d, reason, tt.want, tt.wantReason)
			}
		})
	}
}

// fakeOps is an OperationReader that remembers what it was asked.
type fakeOps struct {
	targets []string
	ops     []agent.OperationInfo
}

func (f *fakeOps) RecentOperations(_ context.Context, target string, _ int) ([]agent.OperationInfo, error) {
	f.targets = append(f.targets, target)
	return f.ops, nil
}

func TestReviewerToolRound(t *testing.T) {
	ops := &fakeOps{ops: []agent.OperationInfo{{ID: "op-earlier1", Tool: "commit_send_message", State: "committed", Excerpt: "Digest for Monday"}}}
	p := &script{Answers: []answer{calls(agent.ToolReadOperations), says(`{"decision":"stop","reasons":["already sent as op-earlier1"]}`)}}
	d, reason, err := agent.NewReviewer(p, "m", ops, nil).Review(context.Background(), payload)
	if err != nil {
		t.Fatal(err)
	}
	if d != verifier.Stop || reason != "already sent as op-earlier1" {
		t.Errorf("got %s %q", d, reason)
	}
	if !slices.Equal(ops.targets, []string{"222"}) {
		t.Errorf("read targets: got %v, want [222]", ops.targets)
	}
	if len(p.Requests) != 2 {
		t.Fatalf("requests: got %d, want 2", len(p.Requests))
	}
	msgs := p.Requests[1].Messages
	last := msgs[len(msgs)-1]
	if len(msgs) != 3 || msgs[1].Role != model.RoleAssistant || len(msgs[1].ToolCalls) != 1 ||
		last.Role != model.RoleTool || len(last.ToolResults) != 1 {
		t.Fatalf("second request messages: got %+v", msgs)
	}
	if r := last.ToolResults[0]; r.CallID != "call_a" || r.IsError || !strings.Contains(r.Content, `"id":"op-earlier1"`) {
		t.Errorf("tool result: got %+v", r)
	}
}

func TestReviewerOffersOnlyTheReadTools(t *testing.T) {
	p := &script{Answers: []answer{says(`{"decision":"pass","reasons":[]}`)}}
	v, err := vault.Open(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	if _, _, err := agent.NewReviewer(p, "m", &fakeOps{}, v).Review(context.Background(), payload); err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, tool := range p.Requests[0].Tools {
		names = append(names, tool.Name)
	}
	if want := []string{"read_operations", "read_vault"}; !slices.Equal(names, want) {
		t.Errorf("tools: got %v, want %v", names, want)
	}
	if req := p.Requests[0]; req.Model != "m" || req.System == "" || req.MaxTokens <= 0 ||
		!strings.Contains(req.Messages[0].Text, "Digest for Monday") || !strings.Contains(req.Messages[0].Text, "Target: 222") {
		t.Errorf("request: got %+v", req)
	}
}

func TestReviewerUnknownToolIsAnErrorResult(t *testing.T) {
	p := &script{Answers: []answer{calls("commit_send_message"), says(`{"decision":"pass","reasons":[]}`)}}
	if _, _, err := agent.NewReviewer(p, "m", &fakeOps{}, nil).Review(context.Background(), payload); err != nil {
		t.Fatal(err)
	}
	msgs := p.Requests[1].Messages
	if r := msgs[len(msgs)-1].ToolResults[0]; !r.IsError {
		t.Errorf("got %+v, want an error result", r)
	}
}

func TestReviewerBoundsToolRounds(t *testing.T) {
	p := &script{Answers: []answer{calls(agent.ToolReadOperations)}}
	d, reason, err := agent.NewReviewer(p, "m", &fakeOps{}, nil).Review(context.Background(), payload)
	if err != nil {
		t.Fatal(err)
	}
	if d != verifier.Stop || reason != agent.NotUnderstood {
		t.Errorf("got %s %q, want stop %q", d, reason, agent.NotUnderstood)
	}
	if got, want := len(p.Requests), agent.MaxToolRounds+1; got != want {
		t.Errorf("requests: got %d, want %d", got, want)
	}
	msgs := p.Requests[len(p.Requests)-1].Messages
	if !strings.Contains(msgs[len(msgs)-1].Text, "No more tool calls") {
		t.Errorf("final request does not ask for the answer: %+v", msgs[len(msgs)-1])
	}
}

func TestReviewerModelErrorStopsThePayload(t *testing.T) {
	p := &script{Answers: []answer{fail(401, "authentication_error", 0)}}
	r := agent.NewReviewer(model.NewRecovery(p, model.Policy{}), "m", nil, nil)
	_, _, err := r.Review(context.Background(), payload)
	var ae *model.APIError
	if !errors.As(err, &ae) || ae.Status != 401 {
		t.Fatalf("got %v, want the 401", err)
	}
	c := verifier.New(policy.Verify{ModelCheck: []string{"commit_send_message"}}, nil, nil).WithModel(r)
	if v := c.Check(context.Background(), payload); v.Decision != verifier.Stop {
		t.Errorf("verdict: got %s, want stop", v.Summary())
	}
}

func TestReviewerInTheVerifier(t *testing.T) {
	p := &script{Answers: []answer{says(`{"decision":"repair","reasons":["name the day"]}`)}}
	c := verifier.New(policy.Verify{ModelCheck: []string{"commit_send_message"}}, nil, nil).WithModel(agent.NewReviewer(p, "m", nil, nil))
	v := c.Check(context.Background(), payload)
	if v.Decision != verifier.Repair || !slices.Contains(v.Reasons, "model: name the day") {
		t.Errorf("verdict: got %s", v.Summary())
	}
}

// The adapters read the real journal and vault, and only for the target under review.
func TestReviewerReadsJournalAndVault(t *testing.T) {
	ctx := context.Background()
	dir := t.TempDir()
	j, err := journal.Open(ctx, filepath.Join(dir, "j.db"))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { j.Close() })
	task, err := j.CreateTask(ctx, journal.Task{Requester: 7})
	if err != nil {
		t.Fatal(err)
	}
	var mine journal.Operation
	for _, target := range []string{"222", "333"} {
		op, err := j.CreateOperation(ctx, journal.Operation{TaskID: task.ID, Tool: "commit_send_message", Fingerprint: "fp" + target,
			Payload: action.Payload{Action: "send_message", Target: target, Text: "Digest, call +49 1512 3456789"}}, "prepared")
		if err != nil {
			t.Fatal(err)
		}
		if target == "222" {
			mine = op
		}
	}
	v, err := vault.Open(filepath.Join(dir, "vault"))
	if err != nil {
		t.Fatal(err)
	}
	now := time.Now().UTC()
	for _, e := range []envelope.Envelope{
		{OperationID: "op-unknown222", Action: "send_message", Tool: "commit_send_message", Status: envelope.StatusUnknown, Target: "222", Created: now, Excerpt: "Digest"},
		{OperationID: "op-unknown333", Action: "send_message", Tool: "commit_send_message", Status: envelope.StatusUnknown, Target: "333", Created: now, Excerpt: "Other"},
	} {
		if _, err := v.Write(e); err != nil {
			t.Fatal(err)
		}
	}
	p := &script{Answers: []answer{calls(agent.ToolReadOperations, agent.ToolReadVault), says(`{"decision":"pass","reasons":[]}`)}}
	if _, _, err := agent.NewReviewer(p, "m", agent.JournalReader(j), v).Review(ctx, payload); err != nil {
		t.Fatal(err)
	}
	msgs := p.Requests[1].Messages
	results := msgs[len(msgs)-1].ToolResults
	if len(results) != 2 {
		t.Fatalf("tool results: got %+v", results)
	}
	ops, envs := results[0].Content, results[1].Content
	if !strings.Contains(ops, mine.ID) || strings.Count(ops, `"id"`) != 1 || strings.Contains(ops, "3456789") {
		t.Errorf("read_operations: got %s, want only %s, masked", ops, mine.ID)
	}
	if !strings.Contains(envs, "op-unknown222") || strings.Contains(envs, "op-unknown333") {
		t.Errorf("read_vault: got %s, want only op-unknown222", envs)
	}
}

// The model check runs under the task's policy snapshot, not the Recovery's
// own: the task's attempts bound its requests, and its waits are bounded
// (agent.ReviewMaxWait), so a failing model never holds a command for minutes.
func TestReviewerRunsUnderTheTasksPolicyAndWaitBound(t *testing.T) {
	tests := []struct {
		name     string
		attempts int
		requests int
	}{
		{"the task's attempts", 2, 2},
		{"the default attempts, within the wait bound", 10, 4},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			p := &script{Answers: []answer{fail(500, "api_error", 0)}}
			var rec recorder
			rev := agent.NewReviewer(rec.Recovery(p, model.Policy{}, noJitter), "m", nil, nil)
			m := policy.DefaultModel()
			m.Attempts = tt.attempts
			in := payload
			in.Model = &m
			if d, _, err := rev.Review(context.Background(), in); err == nil {
				t.Fatalf("got %s, want the model's failure", d)
			}
			var waited time.Duration
			for _, w := range rec.Waits {
				waited += w
			}
			if len(p.Requests) != tt.requests || waited > agent.ReviewMaxWait {
				t.Errorf("%d requests, %s waited (%s); want %d, at most %s", len(p.Requests), waited, model.Trace(rec.Steps), tt.requests, agent.ReviewMaxWait)
			}
		})
	}
}
