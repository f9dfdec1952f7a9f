package agent_test

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/countersign/countersign/action"
	"github.com/countersign/countersign/agent"
	"github.com/countersign/countersign/agent/agenttest"
	"github.com/countersign/countersign/console"
	"github.com/countersign/countersign/internal/rigtest"
	"github.com/countersign/countersign/journal"
	"github.com/countersign/countersign/model"
	"github.com/countersign/countersign/operator"
	"github.com/countersign/countersign/policy"
)

// loopRig is a Loop over a real journal and operator, with the console's printer
// as the sender, asking a scripted model server through a provider (Anthropic's
// unless told), streamed under a Watch, behind Recovery: the composition the bot
// runs.
type loopRig struct {
	t       *testing.T
	pol     *policy.Policy
	j       *journal.Journal
	op      *operator.Operator
	model   *agenttest.Server
	loop    *agent.Loop
	printed *bytes.Buffer
	mu      sync.Mutex
	heard   []agent.Transition
}

const requester = 7

func newLoopRig(t *testing.T, limits agent.LoopLimits, replies ...agenttest.Reply) *loopRig {
	t.Helper()
	return newLoopRigOver(t, agenttest.Anthropic, nil, limits, replies...)
}

// newLoopRigOver is a loopRig asking through the provider of kind, with the
// policy edited by edit when it is not nil.
func newLoopRigOver(t *testing.T, kind string, edit func(*policy.Policy), limits agent.LoopLimits, replies ...agenttest.Reply) *loopRig {
	t.Helper()
	printed := &bytes.Buffer{}
	rg := rigtest.New(t, rigtest.Sender(console.NewPrinter(printed)), rigtest.EditPolicy(func(p *policy.Policy) {
		p.Access = policy.Access{Operators: []policy.UserID{requester}, Approvers: []policy.UserID{requester}}
		if edit != nil {
			edit(p)
		}
	}))
	r := &loopRig{t: t, j: rg.Journal, pol: rg.Policy, printed: printed, model: agenttest.NewServer(t, replies...), op: rg.Operator}
	reg := rg.Tools
	var streamer model.Streamer = model.NewAnthropic(key, r.model.URL)
	if kind == agenttest.OpenAI {
		streamer = model.NewOpenAI(key, r.model.URL+"/v1/")
	}
	watched := model.NewWatch(streamer, 5*time.Second, 10*time.Second, nil)
	rec := model.NewRecovery(watched, model.Policy{},
		model.WithSleep(func(context.Context, time.Duration) error { return nil }))
	r.loop = agent.NewLoop(rec, "claude-test", r.op, reg, limits, func(tr agent.Transition) {
		r.mu.Lock()
		defer r.mu.Unlock()
		r.heard = append(r.heard, tr)
	})
	return r
}

// newLoopRigWith is newLoopRig under the default policy changed by edit.
func newLoopRigWith(t *testing.T, limits agent.LoopLimits, edit func(*policy.Policy), replies ...agenttest.Reply) *loopRig {
	t.Helper()
	return newLoopRigOver(t, agenttest.Anthropic, edit, limits, replies...)
}

// turn starts a task and runs one turn of text in it.
func (r *loopRig) turn(text string) agent.Outcome {
	r.t.Helper()
	ctx := context.Background()
	task, err := r.op.StartTask(ctx, journal.Task{Requester: requester, Chat: "7", Summary: "chat"})
	if err != nil {
		r.t.Fatal(err)
	}
	out, err := r.loop.Turn(ctx, task.ID, text)
	if err != nil {
		r.t.Fatalf("Turn: %v", err)
	}
	return out
}

// toolResults returns the tool_result blocks of the model request n (from 1).
func (r *loopRig) toolResults(n int) []map[string]any {
	r.t.Helper()
	got := r.model.Requests()
	if len(got) < n {
		r.t.Fatalf("the model got %d requests, want at least %d", len(got), n)
	}
	var body struct {
		Messages []struct {
			Content json.RawMessage `json:"content"`
		} `json:"messages"`
	}
	if err := json.Unmarshal(got[n-1].Body, &body); err != nil {
		r.t.Fatal(err)
	}
	var blocks []map[string]any
	last := body.Messages[len(body.Messages)-1].Content
	json.Unmarshal(last, &blocks)
	var out []map[string]any
	for _, b := range blocks {
		if b["type"] == "tool_result" {
			out = append(out, b)
		}
	}
	return out
}

const (
	sendHello = `{"chat_id":"222","text":"Hello from the bot"}`
	badChat   = `{"chat_id":"the team","text":"Hello from the bot"}`
)

func TestLoopPaths(t *testing.T) {
	promptTooLong := agenttest.File(t, "../model/testdata/anthropic/error_400_prompt_too_long.json", http.StatusBadRequest)
	tests := []struct {
		name     string
		limits   agent.LoopLimits
		replies  []agenttest.Reply
		path     string
		requests int
		awaiting int
		say      string
	}{
		{"a commit waits for approval and ends the turn", agent.LoopLimits{},
			[]agenttest.Reply{agenttest.Message("tool_use", "I'll send it.", agenttest.Call("commit_send_message", sendHello))},
			"end:awaiting_approval", 1, 1, "Waiting for approval: op-"},
		{"a draft goes back to the model, which answers", agent.LoopLimits{},
			[]agenttest.Reply{agenttest.Message("tool_use", "", agenttest.Call("prepare_reply", `{"text":"Hi all"}`)), agenttest.Message("end_turn", "Drafted: Hi all")},
			"tool_results -> end:completed", 2, 0, "Drafted: Hi all"},
		{"a repair goes back to the model, which fixes the call", agent.LoopLimits{},
			[]agenttest.Reply{agenttest.Message("tool_use", "", agenttest.Call("commit_send_message", badChat)), agenttest.Message("tool_use", "", agenttest.Call("commit_send_message", sendHello))},
			"tool_results -> end:awaiting_approval", 2, 1, "Waiting for approval"},
		{"the same failed call again is a doom loop", agent.LoopLimits{},
			[]agenttest.Reply{agenttest.Message("tool_use", "", agenttest.Call("commit_send_message", badChat)), agenttest.Message("tool_use", "", agenttest.Call("commit_send_message", badChat))},
			"tool_results -> end:doom_loop", 2, 0, "possible doom loop"},
		{"the same successful call again is a doom loop", agent.LoopLimits{},
			[]agenttest.Reply{agenttest.Message("tool_use", "", agenttest.Call("prepare_reply", `{"text":"Hi all"}`)), agenttest.Message("tool_use", "", agenttest.Call("prepare_reply", `{"text":"Hi all"}`)),
				agenttest.Message("end_turn", "never asked")},
			"tool_results -> end:doom_loop", 2, 0, `Stopped: possible doom loop: prepare_reply(text: "Hi all")`},
		{"a tool the policy does not offer is an error result", agent.LoopLimits{},
			[]agenttest.Reply{agenttest.Message("tool_use", "", agenttest.Call("commit_delete_chat", `{}`)), agenttest.Message("end_turn", "I cannot do that.")},
			"tool_results -> end:completed", 2, 0, "I cannot do that."},
		{"requests run out", agent.LoopLimits{Requests: 2},
			[]agenttest.Reply{agenttest.Message("tool_use", "", agenttest.Call("prepare_reply", `{"text":"v1"}`)), agenttest.Message("tool_use", "", agenttest.Call("prepare_reply", `{"text":"v2"}`))},
			"tool_results -> tool_results -> end:budget_exhausted", 2, 0, "Stopped after 2 model requests"},
		{"a cut reply is continued, and its tool calls never run", agent.LoopLimits{},
			// Recovery raises the output limit once (request 2); the loop then asks to continue.
			[]agenttest.Reply{agenttest.Message("max_tokens", "Part one, ", agenttest.Call("commit_send_message", sendHello)), agenttest.Message("max_tokens", "Part one, ", agenttest.Call("commit_send_message", sendHello)),
				agenttest.Message("end_turn", "part two.")},
			"max_tokens_continue -> end:completed", 3, 0, "Part one, part two."},
		{"a reply cut inside a tool call is asked for again", agent.LoopLimits{},
			[]agenttest.Reply{agenttest.Message("max_tokens", "", agenttest.Call("commit_send_message", sendHello)),
				agenttest.Message("max_tokens", "", agenttest.Call("commit_send_message", sendHello)), agenttest.Message("end_turn", "Too long to send in one go.")},
			"max_tokens_continue -> end:completed", 3, 0, "Too long to send in one go."},
		{"continuations run out", agent.LoopLimits{Continuations: 1},
			[]agenttest.Reply{agenttest.Message("max_tokens", "a "), agenttest.Message("max_tokens", "a "), agenttest.Message("max_tokens", "b ")},
			"max_tokens_continue -> end:budget_exhausted", 3, 0, "a b\n\n(The reply was cut off"},
		{"a prompt too long is collapsed once", agent.LoopLimits{},
			[]agenttest.Reply{agenttest.Message("tool_use", "", agenttest.Call("prepare_reply", `{"text":"v1"}`)),
				agenttest.Message("tool_use", "", agenttest.Call("prepare_reply", `{"text":"v2"}`)), promptTooLong, agenttest.Message("end_turn", "Short answer.")},
			"tool_results -> tool_results -> collapse_retry -> end:completed", 4, 0, "Short answer."},
		{"a prompt too long with nothing to collapse is summarized once", agent.LoopLimits{},
			[]agenttest.Reply{promptTooLong, agenttest.Message("end_turn", "The operator wants a hello sent to 222."), agenttest.Message("end_turn", "Short answer.")},
			"summary_retry -> end:completed", 3, 0, "Short answer."},
		{"a prompt still too long stops", agent.LoopLimits{},
			[]agenttest.Reply{promptTooLong},
			"end:prompt_too_long", 2, 0, "too long"},
		{"a rejected key is a model error", agent.LoopLimits{},
			[]agenttest.Reply{agenttest.File(t, "../model/testdata/anthropic/error_401_authentication.json", http.StatusUnauthorized)},
			"end:model_error", 1, 0, "it answered 401"},
		{"the model declines", agent.LoopLimits{},
			[]agenttest.Reply{agenttest.Message("refusal", "I can't help with that.")},
			"end:refusal", 1, 0, "I can't help with that."},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			r := newLoopRig(t, tt.limits, tt.replies...)
			out := r.turn("Send 'Hello from the bot' to 222")
			if got := agent.Path(out.Path); got != tt.path {
				t.Errorf("path = %s, want %s", got, tt.path)
			}
			if got := agent.Path(r.heard); got != tt.path {
				t.Errorf("observed path = %s, want %s", got, tt.path)
			}
			if n := len(r.model.Requests()); n != tt.requests {
				t.Errorf("model requests = %d, want %d", n, tt.requests)
			}
			if len(out.Awaiting) != tt.awaiting {
				t.Errorf("awaiting = %v, want %d", out.Awaiting, tt.awaiting)
			}
			if !strings.Contains(out.Text, tt.say) {
				t.Errorf("text = %q, want it to contain %q", out.Text, tt.say)
			}
			if strings.Contains(out.Text, key) {
				t.Error("the API key reached the text for the chat")
			}
			if r.printed.String() != "" {
				t.Errorf("something was sent without approval:\n%s", r.printed)
			}
			r.checkRequestsValid()
		})
	}
}

// checkRequestsValid fails the test for a request the Messages API would refuse
// with a 400: a message with no content.
func (r *loopRig) checkRequestsValid() {
	r.t.Helper()
	for i, req := range r.model.Requests() {
		var body struct {
			Messages []struct {
				Role    string            `json:"role"`
				Content []json.RawMessage `json:"content"`
			} `json:"messages"`
		}
		if err := json.Unmarshal(req.Body, &body); err != nil {
			r.t.Fatal(err)
		}
		for j, m := range body.Messages {
			if len(m.Content) == 0 {
				r.t.Errorf("request %d, message %d (%s) has no content", i+1, j, m.Role)
			}
		}
	}
}

func TestLoopResultsFollowTheContract(t *testing.T) {
	r := newLoopRig(t, agent.LoopLimits{},
		agenttest.Message("tool_use", "", agenttest.Call("commit_send_message", badChat), agenttest.Call("prepare_reply", `{"text":"Hi"}`)),
		agenttest.Message("end_turn", "Fixed nothing."))
	r.turn("hi")
	results := r.toolResults(2)
	if len(results) != 2 {
		t.Fatalf("tool results = %v, want one per call", results)
	}
	var repair, draft action.Result
	json.Unmarshal([]byte(contentText(results[0])), &repair)
	json.Unmarshal([]byte(contentText(results[1])), &draft)
	if results[0]["is_error"] != true || repair.Status != action.StatusRepairable || repair.NextAction != action.NextRepair ||
		!strings.Contains(repair.Reason, "not a chat id") || repair.OperationID == "" {
		t.Errorf("the failed call's result = %v / %+v, want an error result with status repairable and the reason", results[0], repair)
	}
	if results[1]["is_error"] == true || draft.Status != action.StatusSucceeded || draft.SideEffect != action.SideEffectNone {
		t.Errorf("the draft's result = %v / %+v, want succeeded with no side effect", results[1], draft)
	}
}

func TestLoopCommitIsJournaledAndWaitsForTheHuman(t *testing.T) {
	r := newLoopRig(t, agent.LoopLimits{}, agenttest.Message("tool_use", "", agenttest.Call("commit_send_message", sendHello)))
	out := r.turn("send it")
	if len(out.Awaiting) != 1 {
		t.Fatalf("awaiting = %v", out.Awaiting)
	}
	op, err := r.j.Operation(context.Background(), out.Awaiting[0])
	if err != nil || op.State != journal.AwaitingApproval || op.Payload.Text != "Hello from the bot" || op.Payload.Target != "222" {
		t.Fatalf("operation = %+v, %v; want the exact payload awaiting approval", op, err)
	}
	// The human approves later; the loop is not involved and the model is not asked again.
	a, _ := r.op.PendingApproval(context.Background(), op.ID)
	if _, err := r.op.Decide(context.Background(), a.ID, requester, true); err != nil {
		t.Fatal(err)
	}
	if got := r.printed.String(); strings.Count(got, "Hello from the bot") != 1 {
		t.Errorf("printed = %q, want the text once", got)
	}
	if got := r.model.Requests(); len(got) != 1 || !got[0].Streamed {
		t.Errorf("model requests = %+v, want 1, streamed", got)
	}
}

// contentText is the text of a tool_result block, whose content is a string or a
// list of text blocks.
func contentText(block map[string]any) string {
	switch c := block["content"].(type) {
	case string:
		return c
	case []any:
		var b strings.Builder
		for _, part := range c {
			if m, ok := part.(map[string]any); ok && m["type"] == "text" {
				b.WriteString(fmt.Sprint(m["text"]))
			}
		}
		return b.String()
	}
	return ""
}

// messagesOf returns the roles and texts of the messages in the model request n.
func (r *loopRig) messagesOf(n int) []string {
	r.t.Helper()
	var body struct {
		Messages []struct {
			Role    string `json:"role"`
			Content []struct {
				Type string `json:"type"`
				Text string `json:"text"`
			} `json:"content"`
		} `json:"messages"`
	}
	if err := json.Unmarshal(r.model.Requests()[n-1].Body, &body); err != nil {
		r.t.Fatal(err)
	}
	var out []string
	for _, m := range body.Messages {
		for _, c := range m.Content {
			if c.Type == "text" {
				out = append(out, m.Role+": "+c.Text)
			}
		}
	}
	return out
}

func (r *loopRig) chat(chat, text string) string {
	r.t.Helper()
	task, err := r.op.StartTask(context.Background(), journal.Task{Requester: requester, Chat: chat, Summary: "chat"})
	if err != nil {
		r.t.Fatal(err)
	}
	say, err := r.loop.Chat(context.Background(), task.ID, chat, text)
	if err != nil {
		r.t.Fatal(err)
	}
	return say
}

func TestChatRemembersTheChatsExchangesOnly(t *testing.T) {
	r := newLoopRig(t, agent.LoopLimits{}, agenttest.Message("end_turn", "Draft: Deploy done at 5."))
	r.chat("7", "draft a deploy note")
	r.chat("7", "shorter")
	r.chat("8", "hello")
	second := strings.Join(r.messagesOf(2), "\n")
	if want := "user: draft a deploy note\nassistant: Draft: Deploy done at 5.\nuser: shorter"; second != want {
		t.Errorf("second request in chat 7:\n%s\nwant\n%s", second, want)
	}
	if other := r.messagesOf(3); len(other) != 1 || other[0] != "user: hello" {
		t.Errorf("first request in chat 8 = %q, want only its own message", other)
	}
}

// /new (Reset) forgets the chat's exchanges: its next turn starts afresh.
func TestResetForgetsTheChatsExchanges(t *testing.T) {
	r := newLoopRig(t, agent.LoopLimits{}, agenttest.Message("end_turn", "ok"))
	r.chat("7", "first")
	if err := r.loop.Reset(context.Background(), "7"); err != nil {
		t.Fatal(err)
	}
	r.chat("7", "second")
	if got := r.messagesOf(2); len(got) != 1 || got[0] != "user: second" {
		t.Errorf("the request after Reset = %q, want only its own message", got)
	}
}

func TestCollapseDropsEarlierExchangesFirst(t *testing.T) {
	promptTooLong := agenttest.File(t, "../model/testdata/anthropic/error_400_prompt_too_long.json", http.StatusBadRequest)
	r := newLoopRig(t, agent.LoopLimits{}, agenttest.Message("end_turn", "ok"), promptTooLong, agenttest.Message("end_turn", "ok again"))
	r.chat("7", "first")
	if say := r.chat("7", "second"); say != "ok again" {
		t.Fatalf("say = %q", say)
	}
	if got := r.messagesOf(2); len(got) != 3 {
		t.Fatalf("the too-long request = %q, want the earlier exchange and this message", got)
	}
	if got := r.messagesOf(3); len(got) != 1 || got[0] != "user: second" {
		t.Errorf("request after the collapse = %q, want only this turn's message", got)
	}
}

// An output limit raised for a cut reply is not carried into the request made
// after the conversation was shortened (the seed's own silent bug): there it
// would ask for more room than the shortened prompt leaves. Anthropic's
// "input length and max_tokens exceed context limit" is such a prompt too
// long, shortened like one, not a model error.
func TestLoopShortenedRequestDropsTheRaisedLimit(t *testing.T) {
	contextLimit := agenttest.File(t, "../model/testdata/anthropic/error_400_context_limit_max_tokens.json", http.StatusBadRequest)
	r := newLoopRig(t, agent.LoopLimits{},
		agenttest.Message("max_tokens", "Drafting"),
		agenttest.Message("tool_use", "", agenttest.Call("prepare_reply", `{"text":"v1"}`)),
		agenttest.Message("tool_use", "", agenttest.Call("prepare_reply", `{"text":"v2"}`)),
		contextLimit, agenttest.Message("end_turn", "Short answer."))
	out := r.turn("Draft a hello for 222")
	if got, want := agent.Path(out.Path), "tool_results -> tool_results -> collapse_retry -> end:completed"; got != want {
		t.Fatalf("path = %s, want %s", got, want)
	}
	var limits []int
	for _, req := range r.model.Requests() {
		var body struct {
			MaxTokens int `json:"max_tokens"`
		}
		if err := json.Unmarshal(req.Body, &body); err != nil {
			t.Fatal(err)
		}
		limits = append(limits, body.MaxTokens)
	}
	p := r.pol.Models()
	want := []int{p.MaxTokens, p.MaxTokensRaised, p.MaxTokensRaised, p.MaxTokensRaised, p.MaxTokens}
	if fmt.Sprint(limits) != fmt.Sprint(want) {
		t.Errorf("max_tokens of each request = %v, want %v: raised once for the cut reply, back after the shortening", limits, want)
	}
}
