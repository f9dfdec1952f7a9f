package agent

import (
	"context"
	_ "embed"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync"

	"github.com/countersign/countersign/operator"
	"github.com/countersign/countersign/tools"
)

//go:embed loop.md
var loopPrompt string

// The names of a Loop's transitions. A turn of the model ends in one of the
// continues, which builds the next state, or in one of the ends.
const (
	// ContToolResults: the tools the model called ran; their results go back.
	ContToolResults = "tool_results"
	// ContMaxTokensContinue: the reply was cut at the output limit (already raised
	// once by Recovery); the model is asked to go on where it stopped.
	ContMaxTokensContinue = "max_tokens_continue"
	// ContCompactRetry: the conversation was too long; earlier tool rounds are
	// dropped and the request made again, once.
	ContCompactRetry = "compact_retry"

	// EndCompleted: the model answered without calling a tool.
	EndCompleted = "completed"
	// EndAwaitingApproval: a commit waits for a human's tap; the outcome is
	// reported to the chat when it comes, not by the model.
	EndAwaitingApproval = "awaiting_approval"
	// EndDoomLoop: the model repeated a call that had already failed.
	EndDoomLoop = "doom_loop"
	// EndToolStopped: a tool's result said stop (a budget spent, a refusal, a
	// verifier's stop, an unknown outcome to verify).
	EndToolStopped = "tool_stopped"
	// EndBudgetExhausted: the turn used every model request it may, or every
	// continuation of a cut reply.
	EndBudgetExhausted = "budget_exhausted"
	// EndModelError: the model request failed after its recovery.
	EndModelError = "model_error"
	// EndPromptTooLong: the conversation was too long even after compaction.
	EndPromptTooLong = "prompt_too_long"
	// EndRefusal: the model declined.
	EndRefusal = "refusal"
	// EndCancelled: the context ended.
	EndCancelled = "cancelled"
)

// Transition is one step of a Loop: a continue with its name, or the end with its
// reason. The recorded path is what tests and logs read, not only where it ended.
type Transition struct {
	Request int // the model request it follows, from 1; 0 before any
	End     bool
	Name    string
	Detail  string
}

// String is the transition in a path: "tool_results", "end:completed".
func (t Transition) String() string {
	if t.End {
		return "end:" + t.Name
	}
	return t.Name
}

// Path joins transitions with arrows.
func Path(ts []Transition) string { return arrows(ts) }

// LoopLimits bound one turn. Zero fields take DefaultLoopLimits'.
type LoopLimits struct {
	// Requests is the most model requests in one turn.
	Requests int
	// Continuations is the most continuation prompts after cut replies.
	Continuations int
	// MaxTokens is the output limit of each request.
	MaxTokens int
}

// DefaultLoopLimits: 8 requests, 3 continuations, 2048 output tokens.
var DefaultLoopLimits = LoopLimits{Requests: 8, Continuations: 3, MaxTokens: 2048}

// Loop is the agent: it gives an operator's text to the model with the policy's
// tools, runs the calls the model makes through the operator (so every call is
// journaled, verified, approved and classified like a command's), and feeds the
// results back until the model is done or a named end. Model requests go through
// the Provider, normally a *Recovery; a retried request never reruns a tool,
// because tools run here, between requests, exactly once per call.
type Loop struct {
	memory   memory
	provider Provider
	model    string
	operator *operator.Operator
	specs    []ToolSpec
	limits   LoopLimits
	observe  func(Transition)
}

// NewLoop returns a Loop asking model through p, offering the tools of reg (the
// policy's). observe, when not nil, hears every transition as it happens.
func NewLoop(p Provider, model string, op *operator.Operator, reg *tools.Registry, limits LoopLimits, observe func(Transition)) *Loop {
	l := &Loop{provider: p, model: model, operator: op, limits: limits, observe: observe}
	d := DefaultLoopLimits
	for _, f := range []struct{ v, def *int }{{&l.limits.Requests, &d.Requests},
		{&l.limits.Continuations, &d.Continuations}, {&l.limits.MaxTokens, &d.MaxTokens}} {
		if *f.v <= 0 {
			*f.v = *f.def
		}
	}
	for _, name := range reg.Names() {
		t, _ := reg.Get(name)
		p := t.Params()
		l.specs = append(l.specs, ToolSpec{Name: name, Description: t.Description(), Properties: p.Properties, Required: p.Required})
	}
	if l.observe == nil {
		l.observe = func(Transition) {}
	}
	return l
}

// Outcome is how one turn ended.
type Outcome struct {
	// Text is what to tell the person: the model's words, or why it stopped.
	Text string
	// End is the end transition's name; Path every transition, in order.
	End  string
	Path []Transition
	// Awaiting are the operations the model's commits left waiting for approval.
	Awaiting []string
}

// state is everything one model request depends on. Each continue builds a new
// state from the last; nothing is carried over by accident.
type state struct {
	messages      []Message
	start         int // the index of this turn's first message, after earlier exchanges
	requests      int
	continuations int
	compacted     bool
	said          string // text of cut replies, joined ahead of the final one
}

// with returns a copy of s with msgs appended.
func (s state) with(msgs ...Message) state {
	s.messages = append(slices.Clip(s.messages), msgs...)
	return s
}

// Turn runs one turn within a task, with no memory of earlier turns: text is the
// operator's message. The error is for what the loop cannot report as an end: the
// operator's journal failing.
func (l *Loop) Turn(ctx context.Context, taskID, text string) (Outcome, error) {
	return l.turn(ctx, taskID, text, nil)
}

// turn runs a turn after the earlier exchanges.
func (l *Loop) turn(ctx context.Context, taskID, text string, earlier []Message) (Outcome, error) {
	var out Outcome
	record := func(s state, t Transition) {
		t.Request = s.requests
		out.Path = append(out.Path, t)
		l.observe(t)
	}
	end := func(s state, name, detail, say string) (Outcome, error) {
		record(s, Transition{End: true, Name: name, Detail: detail})
		out.End, out.Text = name, say
		return out, nil
	}
	s := state{messages: append(earlier, Message{Role: RoleUser, Text: text}), start: len(earlier)}
	for {
		if ctx.Err() != nil {
			return end(s, EndCancelled, ctx.Err().Error(), "Stopped: the bot is shutting down.")
		}
		if s.requests == l.limits.Requests {
			return end(s, EndBudgetExhausted, fmt.Sprintf("%d model requests", s.requests),
				fmt.Sprintf("Stopped after %d model requests without finishing. Nothing else was done; /ops shows what was.", s.requests))
		}
		s.requests++
		res, err := l.provider.Complete(ctx, Request{Model: l.model, System: loopPrompt, Messages: s.messages,
			Tools: l.specs, MaxTokens: l.limits.MaxTokens, Continues: s.continuations > 0})
		switch {
		case errors.Is(err, ErrPromptTooLong) && !s.compacted:
			s = s.compact()
			record(s, Transition{Name: ContCompactRetry, Detail: fmt.Sprintf("%d messages kept", len(s.messages))})
			continue
		case errors.Is(err, ErrPromptTooLong):
			return end(s, EndPromptTooLong, err.Error(), "Stopped: the conversation is too long for the model, even shortened. Start again with a shorter request.")
		case err != nil && ctx.Err() != nil:
			return end(s, EndCancelled, ctx.Err().Error(), "Stopped: the bot is shutting down.")
		case err != nil:
			return end(s, EndModelError, err.Error(), "The model could not be reached ("+modelTrouble(err)+"). Nothing was done; try again later or use the commands (/help).")
		}
		switch {
		case res.Stop == StopMaxTokens && s.continuations < l.limits.Continuations:
			// A cut reply's tool calls may be cut too: none of them runs. A reply cut
			// before any text (inside a tool call) is asked for again, shorter: an
			// empty assistant message is not a valid request.
			if res.Text != "" {
				s = s.with(Message{Role: RoleAssistant, Text: res.Text},
					Message{Role: RoleUser, Text: "Your reply was cut off at the output limit. Continue exactly where it stopped, without repeating."})
			} else {
				s = s.with(Message{Role: RoleUser, Text: "Your reply was cut off at the output limit before it said anything. Answer again, more briefly."})
			}
			s.continuations++
			s.said += res.Text
			record(s, Transition{Name: ContMaxTokensContinue, Detail: fmt.Sprintf("continuation %d", s.continuations)})
			continue
		case res.Stop == StopMaxTokens:
			return end(s, EndBudgetExhausted, fmt.Sprintf("still cut after %d continuations", s.continuations),
				strings.TrimSpace(s.said+res.Text)+"\n\n(The reply was cut off; nothing else was done.)")
		case res.Stop == StopRefusal:
			return end(s, EndRefusal, "", orText(res.Text, "The model declined this request."))
		case len(res.ToolCalls) == 0:
			return end(s, EndCompleted, "", orText(strings.TrimSpace(s.said+res.Text), "Done."))
		}
		round, err := l.runTools(ctx, taskID, res.ToolCalls)
		if err != nil {
			return out, err
		}
		s = s.with(Message{Role: RoleAssistant, Text: res.Text, ToolCalls: res.ToolCalls}, round.results)
		out.Awaiting = append(out.Awaiting, round.awaiting...)
		switch {
		case round.doom != "":
			return end(s, EndDoomLoop, round.doom, "Stopped: "+round.doom)
		case round.stop != "":
			return end(s, EndToolStopped, round.stop, joinSay(res.Text, "Stopped: "+round.stop))
		case len(round.awaiting) > 0:
			return end(s, EndAwaitingApproval, strings.Join(round.awaiting, ", "),
				joinSay(res.Text, awaitingText(round.awaiting)))
		}
		record(s, Transition{Name: ContToolResults, Detail: fmt.Sprintf("%d call(s)", len(res.ToolCalls))})
	}
}

// Chat runs a turn that remembers the chat's recent exchanges, and returns what a
// surface needs: the text for the person and the operations waiting for approval.
// It is the command handler's Agent.
func (l *Loop) Chat(ctx context.Context, taskID, chat, text string) (string, []string, error) {
	out, err := l.turn(ctx, taskID, text, l.memory.recall(chat))
	if err == nil {
		l.memory.keep(chat, text, out.Text)
	}
	return out.Text, out.Awaiting, err
}

// memory holds, per chat, the last exchanges of text (never tool details), so that
// "send that to the team" can follow "draft a note". It lives in the process only.
type memory struct {
	mu    sync.Mutex
	chats map[string][]Message
}

// MemoryExchanges is how many exchanges of a chat a Loop remembers.
const MemoryExchanges = 8

func (m *memory) recall(chat string) []Message {
	m.mu.Lock()
	defer m.mu.Unlock()
	return slices.Clone(m.chats[chat])
}

func (m *memory) keep(chat, said, answered string) {
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.chats == nil {
		m.chats = map[string][]Message{}
	}
	h := append(m.chats[chat], Message{Role: RoleUser, Text: said}, Message{Role: RoleAssistant, Text: answered})
	m.chats[chat] = slices.Clone(h[max(0, len(h)-2*MemoryExchanges):])
}

// round is what came of the tool calls of one model reply.
type round struct {
	results  Message
	awaiting []string
	doom     string // the reason, when the operator's loop guard stopped a call
	stop     string // the reason, when a result said stop
}

// runTools runs each call through the operator, in order, and answers each with the
// normalized result. A call the policy does not offer is an error result the model
// sees. Calls after a stop are not run: they are answered as skipped.
func (l *Loop) runTools(ctx context.Context, taskID string, calls []ToolCall) (round, error) {
	r := round{results: Message{Role: RoleTool}}
	for _, c := range calls {
		if r.doom != "" || r.stop != "" {
			r.results.ToolResults = append(r.results.ToolResults, ToolResult{CallID: c.ID, IsError: true,
				Content: "not run: an earlier call in this turn stopped it"})
			continue
		}
		res, err := l.operator.Call(ctx, taskID, operator.Call{Tool: c.Name, Args: c.Input})
		switch {
		case errors.Is(err, operator.ErrUnknownTool):
			r.results.ToolResults = append(r.results.ToolResults, ToolResult{CallID: c.ID, IsError: true,
				Content: fmt.Sprintf("no tool %q is offered", c.Name)})
			continue
		case err != nil:
			return round{}, fmt.Errorf("agent: %s: %w", c.Name, err)
		}
		data, err := json.Marshal(res)
		if err != nil {
			return round{}, fmt.Errorf("agent: %s: %w", c.Name, err)
		}
		ok := res.Status == tools.StatusSucceeded || res.Status == tools.StatusPending
		r.results.ToolResults = append(r.results.ToolResults, ToolResult{CallID: c.ID, Content: string(data), IsError: !ok})
		switch {
		case res.Status == tools.StatusPending:
			r.awaiting = append(r.awaiting, res.OperationID)
		case res.Cause == tools.CauseDoomLoop:
			r.doom = res.Reason
		case res.NextAction == tools.NextStop || res.NextAction == tools.NextVerify:
			r.stop = res.Reason
		}
	}
	return r, nil
}

// compact keeps the operator's message of this turn and its last tool round, which
// the model needs to go on, and drops the rest (earlier exchanges, the rounds
// between), saying so.
func (s state) compact() state {
	first := s.messages[s.start]
	kept := []Message{first}
	dropped := len(s.messages) - 1
	if n := len(s.messages); n-s.start >= 3 && s.messages[n-1].Role == RoleTool {
		kept = append(kept, s.messages[n-2], s.messages[n-1])
		dropped -= 2
	}
	if dropped > 0 {
		kept[0].Text = fmt.Sprintf("%s\n\n(%d earlier messages were dropped to fit the model's context.)", first.Text, dropped)
	}
	s.messages, s.start, s.compacted = kept, 0, true
	return s
}

func awaitingText(ops []string) string {
	return fmt.Sprintf("Waiting for approval: %s. The outcome will be reported here.", strings.Join(ops, ", "))
}

func joinSay(model, system string) string {
	if model = strings.TrimSpace(model); model == "" {
		return system
	}
	return model + "\n\n" + system
}

func orText(s, def string) string {
	if strings.TrimSpace(s) == "" {
		return def
	}
	return s
}

// modelTrouble words a model failure for a person, without the detail of the error
// (which is in the log).
func modelTrouble(err error) string {
	var api *APIError
	if errors.As(err, &api) {
		return fmt.Sprintf("it answered %d", api.Status)
	}
	var conn *ConnectionError
	if errors.As(err, &conn) {
		return "no answer"
	}
	return "it failed"
}
