package agent_test

import (
	"context"
	"encoding/json"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/countersign/countersign/agent"
	"github.com/countersign/countersign/agent/agenttest"
	"github.com/countersign/countersign/journal"
	"github.com/countersign/countersign/policy"
)

// sent reads the model and output limit of the model request n (from 1).
func (r *loopRig) sent(n int) (model string, maxTokens int) {
	r.t.Helper()
	var body struct {
		Model     string `json:"model"`
		MaxTokens int    `json:"max_tokens"`
	}
	if err := json.Unmarshal(r.model.Requests()[n-1].Body, &body); err != nil {
		r.t.Fatal(err)
	}
	return body.Model, body.MaxTokens
}

func tooLongReply(t *testing.T) agenttest.Reply {
	return agenttest.File(t, "../model/testdata/anthropic/error_400_prompt_too_long.json", http.StatusBadRequest)
}

func overloadedReply(t *testing.T) agenttest.Reply {
	return agenttest.File(t, "../model/testdata/anthropic/error_529_overloaded.json", 529)
}

// Every continue builds the whole next state: a test per pair of transitions where
// a field could leak from one into the next.
func TestEveryContinueBuildsAFreshState(t *testing.T) {
	cut := func(text string) agenttest.Reply { return agenttest.Message("max_tokens", text) }
	tests := []struct {
		name    string
		edit    func(*policy.Policy)
		replies []agenttest.Reply
		path    string
		say     string
		check   func(t *testing.T, r *loopRig)
	}{
		{
			// A cut fragment belongs to the messages it was part of; once a summary
			// replaces them, the fresh answer stands alone.
			name: "cut reply, then compaction",
			replies: []agenttest.Reply{cut("Part one, "), cut("Part one, "), tooLongReply(t),
				agenttest.Message("end_turn", "The operator asked for a long answer."), agenttest.Message("end_turn", "Fresh full answer.")},
			path: "max_tokens_continue -> summary_retry -> end:completed",
			say:  "Fresh full answer.",
		},
		{
			// After the tool results were collapsed, a cut reply is continued with
			// only its own fragment ahead of the rest.
			name: "compaction, then continuation",
			replies: []agenttest.Reply{agenttest.Message("tool_use", "", agenttest.Call("prepare_reply", `{"text":"v1"}`)),
				agenttest.Message("tool_use", "", agenttest.Call("prepare_reply", `{"text":"v2"}`)), tooLongReply(t),
				cut("Alpha "), cut("Alpha "), agenttest.Message("end_turn", "beta.")},
			path: "tool_results -> tool_results -> collapse_retry -> max_tokens_continue -> end:completed",
			say:  "Alpha beta.",
			check: func(t *testing.T, r *loopRig) {
				if _, limit := r.sent(6); limit != 65536 {
					t.Errorf("the continuation asked for %d tokens, want the raised 65536 kept, not raised again", limit)
				}
			},
		},
		{
			// A summary resets what was said: a cut after it continues only itself.
			name: "summary, then continuation",
			replies: []agenttest.Reply{tooLongReply(t), agenttest.Message("end_turn", "Summary."),
				cut("Gamma "), cut("Gamma "), agenttest.Message("end_turn", "delta.")},
			path: "summary_retry -> max_tokens_continue -> end:completed",
			say:  "Gamma delta.",
		},
		{
			// Once the turn fell back, the fallback model serves its continuation too.
			name: "fallback, then continuation",
			edit: func(p *policy.Policy) { p.Model.Fallback = "claude-small" },
			replies: []agenttest.Reply{overloadedReply(t), overloadedReply(t), overloadedReply(t), cut("Epsilon "), cut("Epsilon "),
				agenttest.Message("end_turn", "zeta.")},
			path: "max_tokens_continue -> end:completed",
			say:  "Epsilon zeta.",
			check: func(t *testing.T, r *loopRig) {
				for n, want := range map[int]string{3: "claude-test", 4: "claude-small", 6: "claude-small"} {
					if model, _ := r.sent(n); model != want {
						t.Errorf("request %d went to %s, want %s", n, model, want)
					}
				}
			},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			r := newLoopRigWith(t, agent.LoopLimits{}, tt.edit, tt.replies...)
			out := r.turn("Write it all out")
			if got := agent.Path(out.Path); got != tt.path {
				t.Errorf("path = %s, want %s", got, tt.path)
			}
			if out.Text != tt.say {
				t.Errorf("text = %q, want %q", out.Text, tt.say)
			}
			if n := len(r.model.Requests()); n != len(tt.replies) {
				t.Errorf("model requests = %d, want %d", n, len(tt.replies))
			}
			if tt.check != nil {
				tt.check(t, r)
			}
			r.checkRequestsValid()
		})
	}
}

// The recovery paths say what the seed says: continue where you stopped, no
// apology, no recap, smaller pieces; a prompt too long collapses, then summarizes
// (a background request), each once.
func TestRecoveryPromptsAndTheirGuards(t *testing.T) {
	r := newLoopRig(t, agent.LoopLimits{},
		agenttest.Message("max_tokens", "One "), agenttest.Message("max_tokens", "One "), agenttest.Message("end_turn", "two."))
	r.turn("Count")
	cont := r.messagesOf(3)
	last := cont[len(cont)-1]
	for _, want := range []string{"Continue exactly where you stopped", "no apology", "no recap", "smaller pieces"} {
		if !strings.Contains(last, want) {
			t.Errorf("continuation prompt %q lacks %q", last, want)
		}
	}

	r = newLoopRig(t, agent.LoopLimits{}, tooLongReply(t), agenttest.Message("end_turn", "S."), tooLongReply(t))
	out := r.turn("Too much")
	if got := agent.Path(out.Path); got != "summary_retry -> end:prompt_too_long" {
		t.Errorf("path = %s, want one summary, then the stop", got)
	}
	if n := len(r.model.Requests()); n != 3 {
		t.Errorf("requests = %d, want 3: the request, the summary, the request over it", n)
	}
	if got := r.messagesOf(2); !strings.Contains(got[len(got)-1], "Summarize this conversation") {
		t.Errorf("the summary request ends %q", got[len(got)-1])
	}
}

// An empty reply or an unknown stop reason is a named stop, never "Done.".
func TestUnusableRepliesAreANamedStop(t *testing.T) {
	for _, rep := range []agenttest.Reply{agenttest.Message("end_turn", ""), agenttest.Message("pause_turn", "thinking")} {
		r := newLoopRig(t, agent.LoopLimits{}, rep)
		out := r.turn("Hi")
		if out.End != agent.EndUnsupported || strings.Contains(out.Text, "Done.") {
			t.Errorf("reply %s: end %s, text %q; want unsupported_response, not Done.", rep.Body, out.End, out.Text)
		}
	}
}

// The turn's request budget spans every model call of the turn, and its recovery
// is the task's snapshot: a policy edited while the task is in flight does not
// change it.
func TestATurnRunsOnItsTasksSnapshot(t *testing.T) {
	r := newLoopRigWith(t, agent.LoopLimits{}, func(p *policy.Policy) { p.Model.Attempts = 2 }, overloadedReply(t))
	task, err := r.op.StartTask(context.Background(), journal.Task{Requester: requester, Chat: "7", Summary: "chat"})
	if err != nil {
		t.Fatal(err)
	}
	r.pol.Model.Attempts = 9 // the file edited and reloaded after the task started
	out, err := r.loop.Turn(context.Background(), task.ID, "Hi")
	if err != nil {
		t.Fatal(err)
	}
	if n := len(r.model.Requests()); out.End != agent.EndModelError || n != 2 {
		t.Errorf("end %s after %d requests, want model_error after the snapshot's 2 attempts", out.End, n)
	}

	r = newLoopRigWith(t, agent.LoopLimits{}, func(p *policy.Policy) { p.Model.TurnRequests = 3 },
		agenttest.Message("tool_use", "", agenttest.Call("prepare_reply", `{"text":"v1"}`)), overloadedReply(t))
	out = r.turn("Hi")
	if n := len(r.model.Requests()); out.End != agent.EndBudgetExhausted || n != 3 {
		t.Errorf("end %s after %d requests, want budget_exhausted after the turn's 3", out.End, n)
	}
}

// /stop ends the chat's running turn: the request in flight is abandoned, the turn
// ends cancelled, and the chat is told.
func TestStopEndsTheRunningTurn(t *testing.T) {
	r := newLoopRig(t, agent.LoopLimits{}, agenttest.Message("end_turn", "never seen"))
	arrived, release := make(chan struct{}, 8), make(chan struct{})
	t.Cleanup(func() { close(release) })
	r.model.Config.Handler = http.HandlerFunc(func(w http.ResponseWriter, req *http.Request) {
		arrived <- struct{}{}
		select { // a model that takes its time
		case <-req.Context().Done():
		case <-release:
		}
	})
	task, err := r.op.StartTask(context.Background(), journal.Task{Requester: requester, Chat: "7", Summary: "chat"})
	if err != nil {
		t.Fatal(err)
	}
	type result struct {
		say string
		err error
	}
	done := make(chan result, 1)
	go func() {
		say, err := r.loop.Chat(context.Background(), task.ID, "7", "Write a novel")
		done <- result{say, err}
	}()
	select {
	case <-arrived:
	case <-time.After(10 * time.Second):
		t.Fatal("the model request never arrived")
	}
	if r.loop.Stop("8") {
		t.Error("Stop of a chat with no turn said it stopped one")
	}
	if !r.loop.Stop("7") {
		t.Fatal("Stop found no running turn")
	}
	select {
	case got := <-done:
		if got.err != nil || !strings.Contains(got.say, "Stopped, as you asked") {
			t.Errorf("Chat = %q, %v; want the chat told it stopped", got.say, got.err)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("the turn did not end after Stop")
	}
	if r.heard[len(r.heard)-1].String() != "end:"+agent.EndCancelled {
		t.Errorf("path = %s, want it to end cancelled", agent.Path(r.heard))
	}
	if n := len(arrived); n != 0 {
		t.Errorf("%d more model requests after Stop, want none", n)
	}
}
