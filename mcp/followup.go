package mcp

import (
	"context"
	"errors"
	"fmt"
	"time"

	sdk "github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/countersign/countersign/action"
	"github.com/countersign/countersign/journal"
	"github.com/countersign/countersign/operator"
	"github.com/countersign/countersign/policy"
	"github.com/countersign/countersign/tools"
	"github.com/countersign/countersign/vault"
)

// MaxAwait bounds one await_outcome: under the 60 s many clients allow a tool
// call (Codex's default), so that a wait ends as a result, never as the client's
// timeout. An agent calls again while the outcome stays pending.
const MaxAwait = 50 * time.Second

// defaultAwait is the wait when the call names none.
const defaultAwait = 30 * time.Second

// OperationIn names an operation.
type OperationIn struct {
	OperationID string `json:"operation_id" jsonschema:"the operation id a commit returned (op-...)"`
}

// AwaitIn is await_outcome's input.
type AwaitIn struct {
	OperationID string `json:"operation_id" jsonschema:"the operation id a commit returned (op-...)"`
	TimeoutS    int    `json:"timeout_s,omitempty" jsonschema:"how long to wait in seconds, 1 to 50 (default 30); call again while it stays pending"`
}

// EnvelopesIn is list_envelopes' input: the filters of countersign vault list.
type EnvelopesIn struct {
	Unresolved bool   `json:"unresolved,omitempty" jsonschema:"only envelopes whose outcome is still unknown"`
	Target     string `json:"target,omitempty" jsonschema:"only envelopes for this chat id or @username"`
	OlderThan  string `json:"older_than,omitempty" jsonschema:"only envelopes created longer ago than this duration, e.g. 24h"`
}

// PendingOut is list_pending's output.
type PendingOut struct {
	Operations []journal.View `json:"operations"`
}

// EnvelopesOut is list_envelopes' output; Broken are notes that could not be read,
// with why, skipped as countersign vault list skips them.
type EnvelopesOut struct {
	Envelopes []vault.Summary `json:"envelopes"`
	Broken    []string        `json:"broken,omitempty"`
}

// EnvelopeOut is read_envelope's output: the note's fields and the note itself.
type EnvelopeOut struct {
	Envelope vault.Summary `json:"envelope"`
	Note     string        `json:"note"`
}

// pendingStates are the states /pending lists: waiting for a tap, a retry or a
// person's verification.
var pendingStates = []journal.State{journal.AwaitingApproval, journal.Unknown, journal.NotDelivered, journal.RetryWait}

// maxListed bounds what one list returns.
const maxListed = 100

// FollowUpTools are the read-only tools every session is offered beside the
// policy's (and request_verification, which asks a person and resolves nothing).
var FollowUpTools = []string{"await_outcome", "get_operation", "list_pending", "list_envelopes", "read_envelope", "request_verification"}

func readOnly() *sdk.ToolAnnotations {
	return &sdk.ToolAnnotations{ReadOnlyHint: true, OpenWorldHint: ptr(false)}
}

// addFollowUpTools offers the tools that follow an operation and read the vault.
// None of them decides, sends or resolves anything.
func (s *Server) addFollowUpTools() {
	sdk.AddTool(s.srv, &sdk.Tool{Name: "await_outcome", Annotations: readOnly(), Description: fmt.Sprintf(
		"Wait, at most timeout_s seconds (1 to %d, default %d), until an operation reaches an outcome: committed, rejected, expired, failed, cancelled, or unknown. "+
			"Returns the contract; status stays \"pending\" when the wait ended first: call again. Sends progress notifications on each state change when the call carries a progress token.",
		int(MaxAwait/time.Second), int(defaultAwait/time.Second))}, s.await)
	sdk.AddTool(s.srv, &sdk.Tool{Name: "get_operation", Annotations: readOnly(),
		Description: "The contract of an operation as it stands now, without waiting."}, s.getOperation)
	sdk.AddTool(s.srv, &sdk.Tool{Name: "list_pending", Annotations: readOnly(),
		Description: fmt.Sprintf("Operations waiting for approval, a scheduled retry, or a person's verification (as /pending), newest first, at most %d.", maxListed)}, s.listPending)
	sdk.AddTool(s.srv, &sdk.Tool{Name: "list_envelopes", Annotations: readOnly(),
		Description: "The vault's envelopes of unknown outcomes (resolved ones too, until they expire), with the filters of countersign vault list."}, s.listEnvelopes)
	sdk.AddTool(s.srv, &sdk.Tool{Name: "read_envelope", Annotations: readOnly(),
		Description: "One envelope: its fields and its note (what is known, what is not, how to verify)."}, s.readEnvelopeTool)
	sdk.AddTool(s.srv, &sdk.Tool{Name: "request_verification", OutputSchema: resultSchema,
		Annotations: &sdk.ToolAnnotations{DestructiveHint: ptr(false), IdempotentHint: true, OpenWorldHint: ptr(true)},
		Description: "Ask the approvers, in Telegram, to verify an operation whose outcome is unknown (they get It arrived / It did not arrive buttons). " +
			fmt.Sprintf("They are asked once per operation per %s: a call within it says when they were asked and sends nothing. ", operator.VerificationEvery) +
			"It resolves nothing: a person does; await_outcome follows the answer."}, s.requestVerification)
}

// operation reads an operation, or says plainly that there is none.
func (s *Server) operation(ctx context.Context, id string) (journal.Operation, error) {
	op, err := s.opts.Journal.Operation(ctx, id)
	if errors.Is(err, journal.ErrNotFound) {
		return op, fmt.Errorf("no operation %q", id)
	}
	return op, err
}

func (s *Server) getOperation(ctx context.Context, _ *sdk.CallToolRequest, in OperationIn) (*sdk.CallToolResult, action.Result, error) {
	op, err := s.operation(ctx, in.OperationID)
	if err != nil {
		return nil, action.Result{}, err
	}
	r := s.outcomeOf(ctx, op)
	return contract(r), r, nil
}

// await waits for an operation's outcome, reading the journal, which the process
// that delivers it writes: this one, or a bot beside a stdio server.
func (s *Server) await(ctx context.Context, req *sdk.CallToolRequest, in AwaitIn) (*sdk.CallToolResult, action.Result, error) {
	wait := min(defaultAwait, s.opts.MaxAwait)
	if in.TimeoutS > 0 {
		wait = min(time.Duration(in.TimeoutS)*time.Second, s.opts.MaxAwait)
	}
	ctx, cancel := context.WithTimeout(ctx, wait)
	defer cancel()
	var last journal.State
	changes := 0
	for {
		// Read even when the wait is over, to say where the operation stands.
		op, err := s.operation(context.WithoutCancel(ctx), in.OperationID)
		if err != nil {
			return nil, action.Result{}, err
		}
		if token := req.Params.GetProgressToken(); token != nil && last != "" && op.State != last {
			changes++
			req.Session.NotifyProgress(ctx, &sdk.ProgressNotificationParams{ProgressToken: token, Progress: float64(changes),
				Message: fmt.Sprintf("%s is %s", op.ID, op.State)})
		}
		last = op.State
		if r, done := s.waited(ctx, op, wait); done {
			return contract(r), r, nil
		}
		select {
		case <-ctx.Done():
		case <-time.After(s.opts.PollEvery):
		}
	}
}

// waited is the result of a wait for op as it stands, and whether the wait is
// over: op reached an outcome, nothing will move it (no bot runs), or the wait
// ran out.
func (s *Server) waited(ctx context.Context, op journal.Operation, wait time.Duration) (action.Result, bool) {
	r := s.outcomeOf(ctx, op)
	if settled(op.State) {
		if op.State == journal.Unknown {
			s.refresh() // its envelope is a resource now
		}
		return r, true
	}
	if why := s.delivering(); why != "" {
		r.Reason = fmt.Sprintf("%s is %s, and %s: nothing moves it until `countersign run` starts on this data folder", op.ID, op.State, why)
		r.Cause = action.CauseNoSender
		return r, true
	}
	if ctx.Err() != nil {
		r.Reason = fmt.Sprintf("%s is still %s after %s; call await_outcome again", op.ID, op.State, wait)
		return r, true
	}
	return r, false
}

// settled reports whether an operation in state st has reached an outcome the
// agent acts on. A scheduled retry has not: the system makes it.
func settled(st journal.State) bool {
	switch st {
	case journal.Committed, journal.Failed, journal.Unknown, journal.NotDelivered, journal.Rejected, journal.Expired, journal.Cancelled:
		return true
	}
	return false
}

// outcomeOf is the contract of an operation as it stands: the result journaled
// with its last outcome, or, where none is (a wait, an approval expired by the
// sweep), one read off its state. A state still moving is pending, whatever
// an earlier attempt's result said.
func (s *Server) outcomeOf(ctx context.Context, op journal.Operation) action.Result {
	if t, ok := s.opts.Tools.Get(op.Tool); ok && op.State == journal.Prepared {
		if _, commits := t.(tools.Committer); !commits {
			return action.Result{Status: action.StatusSucceeded, OperationID: op.ID, SideEffect: action.SideEffectNone, NextAction: action.NextNone, Draft: op.Payload.Text}
		}
	}
	if settled(op.State) && op.Result != nil {
		r := *op.Result
		r.OperationID = op.ID
		return r
	}
	if op.State == journal.RetryWait {
		// The attempt's result said "retry"; the system does, so the agent waits.
		r := action.Result{Status: action.StatusPending, OperationID: op.ID, SideEffect: action.SideEffectNone, NextAction: action.NextNone,
			Reason: fmt.Sprintf("%s is retry_wait: nothing was sent yet, and the system retries it at %s", op.ID, op.RetryAt.UTC().Format(time.RFC3339))}
		if left := time.Until(op.RetryAt); left > 0 {
			r.RetryAfterMS = max(left.Milliseconds(), 1)
		}
		return r
	}
	stop := func(cause action.Cause, why string) action.Result {
		return action.Result{Status: action.StatusTerminal, OperationID: op.ID, SideEffect: action.SideEffectNone, NextAction: action.NextStop, Cause: cause, Reason: why}
	}
	switch op.State {
	case journal.Expired:
		return stop(action.CauseApprovalExpired, "the approval expired; nothing was sent")
	case journal.Rejected:
		return stop(action.CauseRejected, "rejected; nothing was sent")
	case journal.Cancelled, journal.Failed:
		return stop("", string(op.State)+"; nothing was sent")
	case journal.Committed:
		return action.Result{Status: action.StatusSucceeded, OperationID: op.ID, SideEffect: action.SideEffectCommitted, NextAction: action.NextNone, Evidence: op.Evidence}
	case journal.Unknown:
		return action.Result{Status: action.StatusTerminal, OperationID: op.ID, SideEffect: action.SideEffectUnknown, NextAction: action.NextVerify, Evidence: op.Evidence,
			Reason: "the outcome is unknown: verify before any retry"}
	case journal.AwaitingApproval:
		return action.Result{Status: action.StatusPending, OperationID: op.ID, SideEffect: action.SideEffectPrepared, NextAction: action.NextAwaitApproval,
			Reason: s.opts.Operator.WaitingReason(ctx, op)}
	}
	return action.Result{Status: action.StatusPending, OperationID: op.ID, SideEffect: action.SideEffectPrepared, NextAction: action.NextNone,
		Reason: fmt.Sprintf("%s is %s: approved, on its way", op.ID, op.State)}
}

func (s *Server) listPending(ctx context.Context, _ *sdk.CallToolRequest, _ struct{}) (*sdk.CallToolResult, PendingOut, error) {
	ops, err := s.opts.Journal.Operations(ctx, journal.Filter{States: pendingStates, Limit: maxListed})
	if err != nil {
		return nil, PendingOut{}, err
	}
	out := PendingOut{Operations: make([]journal.View, 0, len(ops))}
	for _, op := range ops {
		out.Operations = append(out.Operations, op.View())
	}
	return &sdk.CallToolResult{Content: []sdk.Content{&sdk.TextContent{Text: fmt.Sprintf("%d operations wait for approval, a retry or verification.", len(ops))}}}, out, nil
}

func (s *Server) listEnvelopes(_ context.Context, _ *sdk.CallToolRequest, in EnvelopesIn) (*sdk.CallToolResult, EnvelopesOut, error) {
	f := vault.Filter{Unresolved: in.Unresolved}
	if in.Target != "" {
		// Envelopes name chats as payloads do: +222 is 222, @News_Desk is @news_desk.
		t, err := policy.NormalizeTarget(in.Target)
		if err != nil {
			return nil, EnvelopesOut{}, fmt.Errorf("target %q is not a chat id or @username", in.Target)
		}
		f.Target = t
	}
	if in.OlderThan != "" {
		d, err := time.ParseDuration(in.OlderThan)
		if err != nil || d < 0 {
			return nil, EnvelopesOut{}, fmt.Errorf("older_than %q: write a duration like 30m or 24h", in.OlderThan)
		}
		f.OlderThan, f.Now = d, time.Now()
	}
	notes, broken, err := s.opts.Vault.List(f)
	if err != nil {
		return nil, EnvelopesOut{}, err
	}
	out := EnvelopesOut{Envelopes: make([]vault.Summary, 0, len(notes))}
	for _, n := range notes {
		out.Envelopes = append(out.Envelopes, n.Summary())
	}
	for _, b := range broken {
		out.Broken = append(out.Broken, b.Error())
	}
	return &sdk.CallToolResult{Content: []sdk.Content{&sdk.TextContent{Text: fmt.Sprintf("%d envelopes.", len(notes))}}}, out, nil
}

func (s *Server) readEnvelopeTool(ctx context.Context, _ *sdk.CallToolRequest, in OperationIn) (*sdk.CallToolResult, EnvelopeOut, error) {
	e, path, data, err := s.note(ctx, in.OperationID)
	if err != nil {
		return nil, EnvelopeOut{}, err
	}
	out := EnvelopeOut{Envelope: vault.Note{Path: path, Envelope: e}.Summary(), Note: string(data)}
	return &sdk.CallToolResult{Content: []sdk.Content{&sdk.TextContent{Text: out.Note}}}, out, nil
}

func (s *Server) requestVerification(ctx context.Context, req *sdk.CallToolRequest, in OperationIn) (*sdk.CallToolResult, action.Result, error) {
	op, err := s.operation(ctx, in.OperationID)
	if err != nil {
		return nil, action.Result{}, err
	}
	asked, err := s.opts.Operator.RequestVerification(ctx, op.ID, "mcp:"+s.session(req).client)
	var refusal *operator.Refusal
	if errors.As(err, &refusal) {
		return nil, action.Result{}, errors.New(refusal.Words)
	}
	if err != nil {
		return nil, action.Result{}, err
	}
	r := s.outcomeOf(ctx, op)
	r.Reason = "the approvers were asked to verify " + op.ID + " in Telegram; a person resolves it, and await_outcome follows the answer"
	if asked.Repeat {
		r.Reason = fmt.Sprintf("the approvers were already asked to verify %s at %s (by %s); nothing was sent again, and a new request is put only after %s. "+
			"A person resolves it, and await_outcome follows the answer",
			op.ID, asked.Asked.UTC().Format(time.RFC3339), asked.AskedBy, asked.Asked.Add(operator.VerificationEvery).UTC().Format(time.RFC3339))
	}
	return contract(r), r, nil
}
