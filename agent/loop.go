// Package agent is the agent loop and the verifier's reviewer: the state
// machine that turns a chat's text into model turns and tool calls through the
// operator, on the model layer (package model, which cannot reach a tool), and
// the Reviewer that gives the verifier a model's second opinion with read-only
// tools.
package agent

import (
	"context"
	_ "embed"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"slices"
	"strings"
	"sync"

	"github.com/countersign/countersign/action"
	"github.com/countersign/countersign/model"
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
	// ContCollapseRetry: the conversation was too long; earlier exchanges are
	// dropped and the results of earlier tool rounds collapsed, and the request
	// made again, once.
	ContCollapseRetry = "collapse_retry"
	// ContSummaryRetry: still too long; the model summarized the turn so far (a
	// background request), and the request is made again over the summary, once.
	ContSummaryRetry = "summary_retry"

	// EndCompleted: the model answered without calling a tool.
	EndCompleted = "completed"
	// EndAwaitingApproval: a commit waits for a human's tap; the outcome is
	// reported to the chat when it comes, not by the model.
	EndAwaitingApproval = "awaiting_approval"
	// EndDoomLoop: the model repeated a call (after it failed, or after it went
	// through: a repeat is a loop even when it succeeds).
	EndDoomLoop = "doom_loop"
	// EndToolStopped: a tool's result said stop (a budget spent, a refusal, a
	// verifier's stop, an unknown outcome to verify).
	EndToolStopped = "tool_stopped"
	// EndBudgetExhausted: the turn used every model reply it may act on, every
	// continuation of a cut reply, or every request of its budget.
	EndBudgetExhausted = "budget_exhausted"
	// EndModelError: the model request failed after its recovery.
	EndModelError = "model_error"
	// EndPromptTooLong: the conversation was too long even collapsed and summarized.
	EndPromptTooLong = "prompt_too_long"
	// EndRefusal: the model declined.
	EndRefusal = "refusal"
	// EndUnsupported: a reply the loop cannot act on: an unknown stop reason, or
	// no text and no tool call.
	EndUnsupported = "unsupported_response"
	// EndCancelled: the turn was stopped (/stop) or the bot is shutting down.
	EndCancelled = "cancelled"
)

// Transition is one step of a Loop: a continue with its name, or the end with its
// reason. The recorded path is what tests and logs read, not only where it ended.
type Transition struct {
	Request int // the model reply it follows, from 1; 0 before any
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
func Path(ts []Transition) string { return model.Arrows(ts) }

// LoopLimits bound one turn. A zero field takes the task's policy snapshot
// (policy.Model: steps, continuations, max_tokens).
type LoopLimits struct {
	// Requests is the most model replies one turn acts on (tool rounds,
	// continuations); retries inside Recovery are counted by the turn's Budget.
	Requests int
	// Continuations is the most continuation prompts after cut replies.
	Continuations int
	// MaxTokens is the output limit of each request.
	MaxTokens int
}

// Loop is the agent: it gives an operator's text to the model with the policy's
// tools, runs the calls the model makes through the operator (so every call is
// journaled, verified, approved and classified like a command's), and feeds the
// results back until the model is done or a named end. Model requests go through
// the Provider, normally a *Recovery; a retried request never reruns a tool,
// because tools run here, between requests, exactly once per call.
type Loop struct {
	memory   memory
	provider model.Provider
	model    string
	fallback string // the environment's fallback model; "" takes the task's policy
	operator *operator.Operator
	specs    []model.ToolSpec
	limits   LoopLimits
	observe  func(Transition)
	running  Running
}

// LoopOption configures a Loop.
type LoopOption func(*Loop)

// WithFallback sets the fallback model, overriding the policy's (the
// environment's ANTHROPIC_FALLBACK_MODEL / OPENAI_FALLBACK_MODEL).
func WithFallback(name string) LoopOption { return func(l *Loop) { l.fallback = name } }

// NewLoop returns a Loop asking model through p, offering the tools of reg (the
// policy's). observe, when not nil, hears every transition as it happens.
func NewLoop(p model.Provider, modelName string, op *operator.Operator, reg *tools.Registry, limits LoopLimits, observe func(Transition), opts ...LoopOption) *Loop {
	l := &Loop{provider: p, model: modelName, operator: op, limits: limits, observe: observe}
	for _, name := range reg.Names() {
		t, _ := reg.Get(name)
		p := t.Params()
		l.specs = append(l.specs, model.ToolSpec{Name: name, Description: t.Description(), Properties: p.Properties, Required: p.Required})
	}
	if l.observe == nil {
		l.observe = func(Transition) {}
	}
	for _, o := range opts {
		o(l)
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

// state is everything the next model request depends on. Every continue builds
// the whole next state from named fields (see the after* functions), so that
// nothing is carried over by accident: a fragment of a cut reply never outlives
// the messages it belonged to.
type state struct {
	messages []model.Message
	start    int // the index of this turn's first message, after earlier exchanges
	steps    int // model replies acted on
	// continuations counts continuation prompts in the turn; continuing marks
	// the next request as one (Recovery does not raise the limit again for it).
	continuations int
	continuing    bool
	// collapsed and summarized are the one-shot guards of a prompt too long.
	collapsed, summarized bool
	said                  string // text of cut replies, joined ahead of the final one
	// maxTokens is the output limit of the next request: 0 takes the policy's;
	// a cut reply's raised limit is kept until the conversation is shortened,
	// where it would ask for room the shortened prompt may not leave.
	maxTokens int
}

// settings are a turn's bounds and recovery, from the task's policy snapshot.
type settings struct {
	limits LoopLimits
	retry  model.Policy
	budget *model.Budget
}

// Turn runs one turn within a task, with no memory of earlier turns: text is the
// operator's message. The error is for what the loop cannot report as an end: the
// operator's journal failing.
func (l *Loop) Turn(ctx context.Context, taskID, text string) (Outcome, error) {
	return l.turn(ctx, taskID, text, nil)
}

// settingsOf reads the bounds and recovery the task started with.
func (l *Loop) settingsOf(ctx context.Context, taskID string) (settings, error) {
	p, err := l.operator.TaskPolicy(ctx, taskID)
	if err != nil {
		return settings{}, fmt.Errorf("agent: %w", err)
	}
	m := p.Models()
	if l.fallback != "" {
		m.Fallback = l.fallback
	}
	lim := LoopLimits{Requests: m.Steps, Continuations: m.Continuations, MaxTokens: m.MaxTokens}
	for _, f := range []struct {
		dst *int
		v   int
	}{{&lim.Requests, l.limits.Requests},
		{&lim.Continuations, l.limits.Continuations}, {&lim.MaxTokens, l.limits.MaxTokens}} {
		if f.v > 0 {
			*f.dst = f.v
		}
	}
	return settings{limits: lim, retry: model.RetryPolicy(m), budget: model.NewBudget(m.TurnRequests, m.TurnWait)}, nil
}

// turn runs a turn after the earlier exchanges.
func (l *Loop) turn(ctx context.Context, taskID, text string, earlier []model.Message) (Outcome, error) {
	var out Outcome
	record := func(s state, t Transition) {
		t.Request = s.steps
		out.Path = append(out.Path, t)
		l.observe(t)
	}
	end := func(s state, name, detail, say string) (Outcome, error) {
		record(s, Transition{End: true, Name: name, Detail: detail})
		out.End, out.Text = name, say
		return out, nil
	}
	cfg, err := l.settingsOf(ctx, taskID)
	if err != nil {
		return out, err
	}
	var did []string // what the turn's calls did in the world, for an end that would say nothing was
	s := state{messages: append(slices.Clip(earlier), model.Message{Role: model.RoleUser, Text: text}), start: len(earlier)}
	for {
		if ctx.Err() != nil {
			return end(s, EndCancelled, cancelCause(ctx), cancelledText(ctx))
		}
		if s.steps == cfg.limits.Requests {
			return end(s, EndBudgetExhausted, fmt.Sprintf("%d model requests", s.steps),
				fmt.Sprintf("Stopped after %d model requests without finishing. %s; /ops shows what was.", s.steps, doneSay(did, "Nothing else was done")))
		}
		s.steps++
		res, err := l.provider.Complete(ctx, l.request(s, cfg))
		switch {
		case errors.Is(err, model.ErrPromptTooLong) && !s.collapsed:
			next, detail := s.afterCollapse()
			if detail != "" {
				s = next
				record(s, Transition{Name: ContCollapseRetry, Detail: detail})
				continue
			}
			s = next // nothing to collapse: on to the summary
			fallthrough
		case errors.Is(err, model.ErrPromptTooLong) && !s.summarized:
			summary, serr := l.summarize(ctx, s, cfg)
			if serr != nil {
				return end(s, EndPromptTooLong, serr.Error(), tooLongSay(did))
			}
			s = s.afterSummary(summary)
			record(s, Transition{Name: ContSummaryRetry, Detail: fmt.Sprintf("%d characters of summary", len(summary))})
			continue
		case errors.Is(err, model.ErrPromptTooLong):
			return end(s, EndPromptTooLong, err.Error(), tooLongSay(did))
		case err != nil && ctx.Err() != nil:
			return end(s, EndCancelled, cancelCause(ctx), cancelledText(ctx))
		case errors.Is(err, model.ErrTurnBudget):
			return end(s, EndBudgetExhausted, err.Error(), "Stopped: the model kept failing and this request used up its retries. "+doneSay(did, "Nothing else was done")+"; try again later.")
		case err != nil:
			return end(s, EndModelError, err.Error(), "The model could not be reached ("+modelTrouble(err)+"). "+doneSay(did, "Nothing was done")+"; try again later or use the commands (/help).")
		}
		switch {
		case res.Stop == model.StopMaxTokens && s.continuations < cfg.limits.Continuations:
			// A cut reply's tool calls may be cut too: none of them runs.
			s = s.afterCut(res)
			record(s, Transition{Name: ContMaxTokensContinue, Detail: fmt.Sprintf("continuation %d", s.continuations)})
			continue
		case res.Stop == model.StopMaxTokens:
			return end(s, EndBudgetExhausted, fmt.Sprintf("still cut after %d continuations", s.continuations),
				strings.TrimSpace(s.said+res.Text)+"\n\n(The reply was cut off. "+doneSay(did, "Nothing else was done")+".)")
		case res.Stop == model.StopRefusal:
			return end(s, EndRefusal, "", orText(res.Text, "The model declined this request."))
		case unsupported(res):
			return end(s, EndUnsupported, fmt.Sprintf("stop reason %q, %d characters, %d tool calls", res.Stop, len(res.Text), len(res.ToolCalls)),
				"The model's reply could not be used (it said nothing this bot can act on). "+doneSay(did, "Nothing was done")+"; try again, or use the commands (/help).")
		case len(res.ToolCalls) == 0:
			return end(s, EndCompleted, "", strings.TrimSpace(s.said+res.Text))
		}
		// Tools run with the caller's context, not the turn's: /stop abandons the
		// model, never a commit already approved and on its way.
		round, err := l.runTools(context.WithoutCancel(ctx), taskID, res.ToolCalls)
		if err != nil {
			return out, err
		}
		out.Awaiting = append(out.Awaiting, round.awaiting...)
		did = append(did, round.did...)
		switch {
		case round.doom != "":
			return end(s, EndDoomLoop, round.doom, "Stopped: "+round.doom)
		case round.stop != "":
			return end(s, EndToolStopped, round.stop, joinSay(res.Text, "Stopped: "+round.stop))
		case len(round.awaiting) > 0:
			return end(s, EndAwaitingApproval, strings.Join(round.awaiting, ", "),
				joinSay(res.Text, awaitingText(round.awaiting)))
		}
		s = s.afterTools(res, round.results)
		record(s, Transition{Name: ContToolResults, Detail: fmt.Sprintf("%d call(s)", len(res.ToolCalls))})
	}
}

// request is the model request state s makes, travelling with the task's recovery
// and the turn's budget.
func (l *Loop) request(s state, cfg settings) model.Request {
	retry := cfg.retry
	limit := cfg.limits.MaxTokens
	if s.maxTokens > limit {
		limit = s.maxTokens
	}
	return model.Request{Model: l.model, System: loopPrompt, Messages: s.messages, Tools: l.specs,
		MaxTokens: limit, Continues: s.continuing, Retry: &retry, Budget: cfg.budget}
}

// knownStops are the stop reasons the loop acts on.
var knownStops = []model.StopReason{model.StopEndTurn, model.StopToolUse, model.StopMaxTokens, model.StopRefusal}

// unsupported reports a reply the loop cannot act on: a stop reason it does not
// know, or a reply with neither text nor a tool call.
func unsupported(res model.Response) bool {
	return !slices.Contains(knownStops, res.Stop) || (strings.TrimSpace(res.Text) == "" && len(res.ToolCalls) == 0)
}

const tooLongText = "Stopped: the conversation is too long for the model, even shortened and summarized. Start again with a shorter request."

// tooLongSay is tooLongText, with what the turn did before it.
func tooLongSay(did []string) string {
	if len(did) == 0 {
		return tooLongText
	}
	return tooLongText + " " + doneSay(did, "") + "."
}

// doneSay is what the turn's calls did in the world before it ended (the tool
// ran; the report failed), with the operations' ids; nothing when they did
// nothing. The chat is never told nothing was done over a send that went out.
func doneSay(did []string, nothing string) string {
	if len(did) == 0 {
		return nothing
	}
	return "Done before that: " + strings.Join(did, ", ") + "; nothing else was done"
}

// continuationPrompt asks for the rest of a cut reply.
const continuationPrompt = "Your reply was cut off at the output limit. Continue exactly where you stopped, mid-sentence if need be: no apology, no recap of what you already wrote. Break what is left into smaller pieces."

// recutPrompt asks again for a reply that was cut before it said anything (inside
// a tool call): an empty assistant message is not a valid request.
const recutPrompt = "Your reply was cut off at the output limit before it said anything. Answer again in smaller pieces: one short step at a time."

// afterTools is the state after a tool round: the model's reply and its results
// appended. A continuation in progress ends with it.
func (s state) afterTools(reply model.Response, results model.Message) state {
	return state{
		messages:      append(slices.Clip(s.messages), model.Message{Role: model.RoleAssistant, Text: reply.Text, ToolCalls: reply.ToolCalls}, results),
		start:         s.start,
		steps:         s.steps,
		continuations: s.continuations,
		continuing:    false,
		collapsed:     s.collapsed,
		summarized:    s.summarized,
		said:          s.said,
		maxTokens:     max(s.maxTokens, reply.MaxTokens),
	}
}

// afterCut is the state after a reply cut at the output limit: its text kept, and
// the model asked to continue (or, cut before any text, to answer again).
func (s state) afterCut(cut model.Response) state {
	msgs := []model.Message{{Role: model.RoleUser, Text: recutPrompt}}
	if cut.Text != "" {
		msgs = []model.Message{{Role: model.RoleAssistant, Text: cut.Text}, {Role: model.RoleUser, Text: continuationPrompt}}
	}
	return state{
		messages:      append(slices.Clip(s.messages), msgs...),
		start:         s.start,
		steps:         s.steps,
		continuations: s.continuations + 1,
		continuing:    true,
		collapsed:     s.collapsed,
		summarized:    s.summarized,
		said:          s.said + cut.Text,
		maxTokens:     max(s.maxTokens, cut.MaxTokens),
	}
}

// afterCollapse is the state with earlier exchanges dropped and the results of
// every tool round but the last collapsed to a note, and a detail of what it did:
// "" when there was nothing to collapse. A cut reply's fragment stays, with the
// messages it belongs to.
func (s state) afterCollapse() (state, string) {
	turn := s.messages[s.start:]
	lastTool := -1
	for i := range turn {
		if turn[i].Role == model.RoleTool {
			lastTool = i
		}
	}
	msgs, collapsed := make([]model.Message, 0, len(turn)), 0
	for i, m := range turn {
		if m.Role == model.RoleTool && i != lastTool {
			m.ToolResults = slices.Clone(m.ToolResults)
			for k, r := range m.ToolResults {
				note := fmt.Sprintf("(result collapsed to fit the model's context: %d characters; call again only if you need it)", len(r.Content))
				if len(note) >= len(r.Content) {
					continue // the note would not make the prompt smaller: the result stays
				}
				m.ToolResults[k].Content = note
				collapsed++
			}
		}
		msgs = append(msgs, m)
	}
	next := state{
		messages:      msgs,
		start:         0,
		steps:         s.steps,
		continuations: s.continuations,
		continuing:    s.continuing,
		collapsed:     true,
		summarized:    s.summarized,
		said:          s.said,
		maxTokens:     0, // the shortened prompt asks for the policy's limit again
	}
	if s.start == 0 && collapsed == 0 {
		return next, ""
	}
	return next, fmt.Sprintf("%d earlier messages dropped, %d tool results collapsed", s.start, collapsed)
}

// afterSummary is the state that starts over from the operator's message and the
// model's summary of the turn so far. The summary replaces every message, cut
// fragments included: what was said before is not said again.
func (s state) afterSummary(summary string) state {
	first := s.messages[s.start]
	return state{
		messages: []model.Message{{Role: model.RoleUser, Text: first.Text + "\n\n(The conversation so far was too long for your context. " +
			"Your own summary of it:)\n" + summary}},
		start:         0,
		steps:         s.steps,
		continuations: 0,
		continuing:    false,
		collapsed:     true,
		summarized:    true,
		said:          "",
		maxTokens:     0, // the shortened prompt asks for the policy's limit again
	}
}

// summaryPrompt asks the model to summarize a turn that no longer fits.
const summaryPrompt = "Summarize this conversation for yourself, to continue it in a fresh context: the operator's request, every tool call made and its result (operation ids, statuses, reasons), and what is left to do. Facts only, no advice, at most 300 words."

// summarize asks the model, once and as a background request (it gives up on
// overload), to summarize the turn so far; the conversation is collapsed first.
func (l *Loop) summarize(ctx context.Context, s state, cfg settings) (string, error) {
	msgs := append(slices.Clip(s.messages), model.Message{Role: model.RoleUser, Text: summaryPrompt})
	if last := s.messages[len(s.messages)-1]; last.Role == model.RoleUser {
		msgs = append(slices.Clip(s.messages[:len(s.messages)-1]), model.Message{Role: model.RoleUser, Text: last.Text + "\n\n" + summaryPrompt})
	}
	retry := cfg.retry
	res, err := l.provider.Complete(ctx, model.Request{Model: l.model, System: loopPrompt, Messages: msgs,
		MaxTokens: cfg.limits.MaxTokens, Background: true, Retry: &retry, Budget: cfg.budget})
	if err != nil {
		return "", fmt.Errorf("summary: %w", err)
	}
	if strings.TrimSpace(res.Text) == "" {
		return "", errors.New("summary: the model returned no text")
	}
	return res.Text, nil
}

// Chat runs a turn that remembers the chat's recent exchanges, and returns the
// text for the person; the approvals it asked for reach the surfaces as the
// operator's events. It is the command handler's Agent. Stop(chat) ends it early.
func (l *Loop) Chat(ctx context.Context, taskID, chat, text string) (string, error) {
	ctx, done := l.running.Start(ctx, chat)
	defer done()
	out, err := l.turn(ctx, taskID, text, l.memory.recall(chat))
	if err == nil && out.End != EndCancelled {
		l.memory.keep(chat, text, out.Text)
	}
	return out.Text, err
}

// Stop cancels the turn running in chat, if any, and reports whether there was
// one. The model request in flight is abandoned; a commit already approved and
// on its way is not (tools run outside the turn's cancellation). The turn ends
// cancelled, and the chat is told.
func (l *Loop) Stop(chat string) bool { return l.running.Stop(chat) }

// Reset forgets the chat's recent exchanges: its next turn starts afresh (/new).
func (l *Loop) Reset(_ context.Context, chat string) error {
	l.memory.forget(chat)
	return nil
}

// ErrStopped is the cause of a turn's cancellation by Stop.
var ErrStopped = errors.New("agent: stopped at the operator's request")

// Running holds the cancel function of the turn running in each chat, so that
// /stop can end it: the model loop's and the agent CLIs' coordinator's. The zero
// value is ready; it is safe for concurrent use.
type Running struct {
	mu    sync.Mutex
	turns map[string]*runningTurn
}

type runningTurn struct{ cancel context.CancelCauseFunc }

// Start registers the turn starting in chat and returns its context, which Stop
// cancels with ErrStopped, and the function to call when it ends.
func (r *Running) Start(ctx context.Context, chat string) (context.Context, func()) {
	ctx, cancel := context.WithCancelCause(ctx)
	t := &runningTurn{cancel: cancel}
	r.mu.Lock()
	if r.turns == nil {
		r.turns = map[string]*runningTurn{}
	}
	r.turns[chat] = t
	r.mu.Unlock()
	return ctx, func() {
		r.mu.Lock()
		if r.turns[chat] == t {
			delete(r.turns, chat)
		}
		r.mu.Unlock()
		cancel(nil)
	}
}

// Stop cancels the turn running in chat with ErrStopped, and reports whether
// there was one.
func (r *Running) Stop(chat string) bool {
	r.mu.Lock()
	t := r.turns[chat]
	delete(r.turns, chat)
	r.mu.Unlock()
	if t == nil {
		return false
	}
	t.cancel(ErrStopped)
	return true
}

// cancelCause is why the turn's context ended, for the log.
func cancelCause(ctx context.Context) string { return context.Cause(ctx).Error() }

// cancelledText tells the chat why its turn ended early.
func cancelledText(ctx context.Context) string {
	if errors.Is(context.Cause(ctx), ErrStopped) {
		return "Stopped, as you asked. Nothing more will be done for that request; a send already approved still goes out."
	}
	return "Stopped: the bot is shutting down."
}

// memory holds, per chat, the last exchanges of text (never tool details), so that
// "send that to the team" can follow "draft a note". It lives in the process only.
type memory struct {
	mu    sync.Mutex
	chats map[string][]model.Message
}

// MemoryExchanges is how many exchanges of a chat a Loop remembers.
const MemoryExchanges = 8

func (m *memory) recall(chat string) []model.Message {
	m.mu.Lock()
	defer m.mu.Unlock()
	return slices.Clone(m.chats[chat])
}

func (m *memory) forget(chat string) {
	m.mu.Lock()
	defer m.mu.Unlock()
	delete(m.chats, chat)
}

func (m *memory) keep(chat, said, answered string) {
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.chats == nil {
		m.chats = map[string][]model.Message{}
	}
	h := append(m.chats[chat], model.Message{Role: model.RoleUser, Text: said}, model.Message{Role: model.RoleAssistant, Text: answered})
	m.chats[chat] = slices.Clone(h[max(0, len(h)-2*MemoryExchanges):])
}

// round is what came of the tool calls of one model reply.
type round struct {
	results  model.Message
	awaiting []string
	did      []string // the calls that changed the world: "tool op-id"
	doom     string   // the reason, when the operator's loop guard stopped a call
	stop     string   // the reason, when a result said stop
}

// runTools runs each call through the operator, in order, and answers each with the
// normalized result. A call the policy does not offer is an error result the model
// sees. Calls after a stop are not run: they are answered as skipped.
func (l *Loop) runTools(ctx context.Context, taskID string, calls []model.ToolCall) (round, error) {
	r := round{results: model.Message{Role: model.RoleTool}}
	for _, c := range calls {
		if r.doom != "" || r.stop != "" {
			r.results.ToolResults = append(r.results.ToolResults, model.ToolResult{CallID: c.ID, IsError: true,
				Content: "not run: an earlier call in this turn stopped it"})
			continue
		}
		res, err := l.operator.Call(ctx, taskID, operator.Call{Tool: c.Name, Args: c.Input})
		switch {
		case errors.Is(err, operator.ErrUnknownTool):
			r.results.ToolResults = append(r.results.ToolResults, model.ToolResult{CallID: c.ID, IsError: true,
				Content: fmt.Sprintf("no tool %q is offered", c.Name)})
			continue
		case err != nil:
			return round{}, fmt.Errorf("agent: %s: %w", c.Name, err)
		}
		data, err := json.Marshal(res)
		if err != nil {
			return round{}, fmt.Errorf("agent: %s: %w", c.Name, err)
		}
		ok := res.Status == action.StatusSucceeded || res.Status == action.StatusPending
		r.results.ToolResults = append(r.results.ToolResults, model.ToolResult{CallID: c.ID, Content: string(data), IsError: !ok})
		if res.SideEffect == action.SideEffectCommitted {
			r.did = append(r.did, c.Name+" "+res.OperationID)
		}
		switch {
		case res.Status == action.StatusPending:
			r.awaiting = append(r.awaiting, res.OperationID)
		case res.Cause == action.CauseDoomLoop:
			r.doom = res.Reason
		case res.NextAction == action.NextStop || res.NextAction == action.NextVerify:
			r.stop = res.Reason
		}
	}
	return r, nil
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
	var api *model.APIError
	switch {
	case errors.As(err, &api) && api.Status == http.StatusOK && api.Type != "":
		return "it failed mid-reply: " + strings.ReplaceAll(api.Type, "_", " ")
	case errors.As(err, &api):
		return fmt.Sprintf("it answered %d", api.Status)
	}
	var conn *model.ConnectionError
	if errors.As(err, &conn) {
		return "no answer"
	}
	return "it failed"
}
