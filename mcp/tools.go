package mcp

import (
	"context"
	"encoding/json"
	"errors"
	"time"

	"github.com/google/jsonschema-go/jsonschema"
	sdk "github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/countersign/countersign/action"
	"github.com/countersign/countersign/command"
	"github.com/countersign/countersign/journal"
	"github.com/countersign/countersign/operator"
	"github.com/countersign/countersign/policy"
	"github.com/countersign/countersign/tools"
)

// resultSchema is the output schema of every tool that answers with the contract,
// its closed sets spelled out for the agent.
var resultSchema = func() *jsonschema.Schema {
	s, err := jsonschema.For[action.Result](nil)
	if err != nil {
		panic("mcp: the contract has no schema: " + err.Error()) // a programming error, caught by any test
	}
	for field, values := range map[string][]any{
		"status":      {action.StatusSucceeded, action.StatusRetryable, action.StatusRepairable, action.StatusTerminal, action.StatusPending},
		"side_effect": {action.SideEffectNone, action.SideEffectPrepared, action.SideEffectCommitted, action.SideEffectUnknown},
		"next_action": {action.NextNone, action.NextRetry, action.NextRepair, action.NextStop, action.NextVerify, action.NextAwaitApproval},
	} {
		s.Properties[field].Enum = values
	}
	return s
}()

// addPolicyTools offers the policy's tools, each with the JSON Schema of its
// arguments as the registry describes them to a model, and hints from its
// class: a state-setting commit (an edit, a delete, a pin) changes what is
// already there, and a repeat of it changes nothing more; an additive one adds. The arguments are read by
// the tool itself, as models write them (tools.Prepare), not by the SDK: a wrong
// one comes back as a repair in the contract, paid from the task's repair budget,
// as it does for every surface.
func (s *Server) addPolicyTools() {
	for _, name := range s.opts.Tools.Names() {
		t, _ := s.opts.Tools.Get(name)
		p := t.Params()
		_, commits := t.(tools.Committer)
		schema := map[string]any{"type": "object", "properties": p.Properties, "required": p.Required}
		sets := commits && tools.ClassOf(t) == policy.StateSetting &&
			(s.opts.Policy == nil || s.opts.Policy.Tools[name].Idempotency != policy.Additive) // a policy may narrow it
		s.srv.AddTool(&sdk.Tool{Name: name, Description: t.Description(), InputSchema: schema, OutputSchema: resultSchema,
			Annotations: &sdk.ToolAnnotations{ReadOnlyHint: !commits, DestructiveHint: ptr(sets), IdempotentHint: sets, OpenWorldHint: ptr(commits)}},
			func(ctx context.Context, req *sdk.CallToolRequest) (*sdk.CallToolResult, error) {
				return s.runTool(ctx, req, name, commits)
			})
	}
}

func ptr[T any](v T) *T { return &v }

// runTool runs one call of a policy tool. A commit made where nothing would
// deliver it (a stdio server with no bot running) is not created at all: an
// operation journaled now would be shown and sent when a bot starts, perhaps long
// after the agent and the person forgot it.
func (s *Server) runTool(ctx context.Context, req *sdk.CallToolRequest, name string, commits bool) (*sdk.CallToolResult, error) {
	if commits {
		if why := s.delivering(); why != "" {
			r := action.Result{Status: action.StatusTerminal, SideEffect: action.SideEffectNone, NextAction: action.NextStop,
				Cause: action.CauseNoSender, Reason: noBot(why)}
			return contract(r), nil
		}
	}
	args := req.Params.Arguments
	if len(args) == 0 {
		args = json.RawMessage("{}")
	}
	r, err := s.call(ctx, req, operator.Call{Tool: name, Args: args})
	if errors.Is(err, operator.ErrUnknownTool) {
		return nil, err // the session's policy snapshot does not offer it: a protocol error
	}
	if journal.IsFull(err) {
		s.opts.Logger.Warn("mcp tool call not journaled: the disk is full", "tool", name, "err", err)
		return diskFull(), nil
	}
	if err != nil {
		s.opts.Logger.Error("mcp tool call failed", "tool", name, "err", err)
		return nil, err
	}
	return contract(r), nil
}

// diskFullWait is how long an agent is asked to wait before calling again after
// the journal's disk was full.
const diskFullWait = 30 * time.Second

// diskFull is the contract's answer to a call the journal had no room to record:
// nothing was sent (a commit leaves only after its approval is journaled), and it
// may be called again once there is room. Whether a first record of it was kept
// is not known: list_pending tells, before the agent calls again.
func diskFull() *sdk.CallToolResult {
	r := action.Result{Status: action.StatusRetryable, SideEffect: action.SideEffectNone, NextAction: action.NextRetry,
		RetryAfterMS: diskFullWait.Milliseconds(), Cause: action.CauseDiskFull,
		Reason: "Known: the bot's disk is full, so the call could not be journaled; nothing was sent. " +
			"Not known: whether a record of it was kept. To do: call list_pending, and call again once there is room if it is not there."}
	res := contract(r)
	res.IsError = true
	return res
}

// contract is a result as MCP carries it: the contract as structured content and
// one readable line. The loop guard's stop is a tool error, so that an agent that
// looks only at isError stops too.
func contract(r action.Result) *sdk.CallToolResult {
	return &sdk.CallToolResult{Content: []sdk.Content{&sdk.TextContent{Text: line(r)}},
		StructuredContent: r, IsError: r.Cause == action.CauseDoomLoop}
}

// line is a result in one line of words, with the operation id and what to do.
func line(r action.Result) string {
	if r.OperationID == "" {
		return r.Reason
	}
	return command.Describe(r)
}
