package agent_test

import (
	"context"
	"encoding/json"
	"strings"
	"testing"

	"github.com/countersign/countersign/agent"
	"github.com/countersign/countersign/agent/agenttest"
	"github.com/countersign/countersign/journal"
	"github.com/countersign/countersign/policy"
)

// autoApproveTo222 lets commit_send_message to chat 222 run without a tap, so that
// a model's call sends within the turn.
func autoApproveTo222(p *policy.Policy) {
	p.AutoApprove = []policy.AutoApprove{{Tool: "commit_send_message", Chats: []string{"222"}}}
}

// The loop over either provider: the model calls a tool once, the request that
// follows meets an overload and is retried, then the model answers. The tool
// runs exactly once: a retried request never runs it again.
func TestLoopOverBothProviders(t *testing.T) {
	for _, kind := range kinds {
		t.Run(kind, func(t *testing.T) {
			r := newLoopRigOver(t, kind, autoApproveTo222, agent.LoopLimits{},
				agenttest.Message("tool_use", "Sending it.", agenttest.Send("222", "Hello from the bot")),
				agenttest.Fail(agenttest.Overload),
				agenttest.Message("end_turn", "Sent to 222."))
			out := r.turn("Send 'Hello from the bot' to 222")
			if got, want := agent.Path(out.Path), "tool_results -> end:completed"; got != want {
				t.Errorf("path = %s, want %s", got, want)
			}
			if out.Text != "Sent to 222." {
				t.Errorf("text = %q, want the final answer", out.Text)
			}
			if n := strings.Count(r.printed.String(), "Hello from the bot"); n != 1 {
				t.Errorf("the text was sent %d times, want once:\n%s", n, r.printed)
			}
			ops, err := r.j.Operations(context.Background(), journal.Filter{})
			if err != nil || len(ops) != 1 || ops[0].State != journal.Committed {
				t.Errorf("operations = %+v, %v; want one, committed", ops, err)
			}
			reqs := r.model.Requests()
			if len(reqs) != 3 {
				t.Fatalf("model requests = %d, want 3 (tool call, overload, answer)", len(reqs))
			}
			if string(reqs[1].Body) != string(reqs[2].Body) {
				t.Errorf("the retried request differs from the one that met the overload:\n%s\n%s", reqs[1].Body, reqs[2].Body)
			}
			want := map[string]string{agenttest.Anthropic: "toolu_01", agenttest.OpenAI: "call_01"}[kind]
			if id := lastToolResultID(t, kind, reqs[2].Body); id != want {
				t.Errorf("the last request answers call %q, want %q: %s", id, want, reqs[2].Body)
			}
		})
	}
}

// A prompt too long for the model, in either API's words, is collapsed once, then
// summarized once.
func TestLoopCompactsOverBothProviders(t *testing.T) {
	for _, kind := range kinds {
		t.Run(kind, func(t *testing.T) {
			r := newLoopRigOver(t, kind, nil, agent.LoopLimits{},
				agenttest.Message("tool_use", "", agenttest.Call("prepare_reply", `{"text":"v1"}`)),
				agenttest.Message("tool_use", "", agenttest.Call("prepare_reply", `{"text":"v2"}`)),
				agenttest.Fail(agenttest.PromptTooLong), agenttest.Fail(agenttest.PromptTooLong),
				agenttest.Message("end_turn", "Summary."), agenttest.Message("end_turn", "Short answer."))
			out := r.turn("hi")
			want := "tool_results -> tool_results -> collapse_retry -> summary_retry -> end:completed"
			if got := agent.Path(out.Path); got != want || out.Text != "Short answer." {
				t.Errorf("path = %s, text %q; want %s and the answer", got, out.Text, want)
			}
			if n := len(r.model.Requests()); n != 6 {
				t.Errorf("model requests = %d, want 6", n)
			}
		})
	}
}

// lastToolResultID is the call id the last message of a request body answers, in
// the request's format ("" when it answers none).
func lastToolResultID(t *testing.T, kind string, body []byte) string {
	t.Helper()
	if kind == agenttest.OpenAI {
		var b struct {
			Messages []struct {
				Role       string `json:"role"`
				ToolCallID string `json:"tool_call_id"`
			} `json:"messages"`
		}
		if err := json.Unmarshal(body, &b); err != nil || len(b.Messages) == 0 {
			t.Fatalf("request body: %v", err)
		}
		last := b.Messages[len(b.Messages)-1]
		if last.Role != "tool" {
			return ""
		}
		return last.ToolCallID
	}
	var b struct {
		Messages []struct {
			Content []struct {
				Type      string `json:"type"`
				ToolUseID string `json:"tool_use_id"`
			} `json:"content"`
		} `json:"messages"`
	}
	if err := json.Unmarshal(body, &b); err != nil || len(b.Messages) == 0 {
		t.Fatalf("request body: %v", err)
	}
	for _, c := range b.Messages[len(b.Messages)-1].Content {
		if c.Type == "tool_result" {
			return c.ToolUseID
		}
	}
	return ""
}

// A model that keeps failing inside its stream ends the turn as a model error,
// and the chat is told what happened, not a status the service never sent.
func TestLoopReportsAnErrorInsideTheStream(t *testing.T) {
	for _, kind := range kinds {
		t.Run(kind, func(t *testing.T) {
			r := newLoopRigOver(t, kind, nil, agent.LoopLimits{}, toolAnswer.FailAfter(3, agenttest.ServerError))
			out := r.turn("weather?")
			if got := agent.Path(out.Path); got != "end:model_error" {
				t.Errorf("path = %s, want end:model_error", got)
			}
			if strings.Contains(out.Text, "answered 200") || !strings.Contains(out.Text, "failed mid-reply") {
				t.Errorf("the chat was told %q, want what failed, not a status the service never sent", out.Text)
			}
		})
	}
}

// A turn that ends in trouble after an auto-approved send went out says so,
// with the operation's id: never "Nothing was done" over a message already
// delivered (the tool ran; the report failed).
func TestLoopEndingSaysWhatWasAlreadyDone(t *testing.T) {
	authFailed := agenttest.File(t, "../model/testdata/anthropic/error_401_authentication.json", 401)
	tests := []struct {
		name, path string
		limits     agent.LoopLimits
		then       agenttest.Reply
	}{
		{"a model error", "tool_results -> end:model_error", agent.LoopLimits{}, authFailed},
		{"the step limit", "tool_results -> end:budget_exhausted", agent.LoopLimits{Requests: 1}, agenttest.Message("end_turn", "never asked")},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			r := newLoopRigWith(t, tt.limits, autoApproveTo222,
				agenttest.Message("tool_use", "Sending it.", agenttest.Send("222", "Hello from the bot")), tt.then)
			out := r.turn("Send 'Hello from the bot' to 222")
			if got := agent.Path(out.Path); got != tt.path {
				t.Fatalf("path = %s, want %s", got, tt.path)
			}
			ops, err := r.j.Operations(context.Background(), journal.Filter{States: []journal.State{journal.Committed}})
			if err != nil || len(ops) != 1 {
				t.Fatalf("committed operations = %+v, %v; want one", ops, err)
			}
			if strings.Contains(out.Text, "Nothing was done") || strings.Contains(out.Text, "Nothing else was done") ||
				!strings.Contains(out.Text, "Done before that: commit_send_message "+ops[0].ID) {
				t.Errorf("text = %q; want it to name %s as done, and not say that nothing was done", out.Text, ops[0].ID)
			}
		})
	}
}
