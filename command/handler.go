package command

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/countersign/countersign/action"
	"github.com/countersign/countersign/journal"
	"github.com/countersign/countersign/operator"
	"github.com/countersign/countersign/policy"
	"github.com/countersign/countersign/secret"
	"github.com/countersign/countersign/tools"
)

// Handler carries out commands on the operator for one surface (a terminal,
// Telegram). It checks that the user may operate; approval decisions are checked by
// the operator against the task's policy.
type Handler struct {
	Operator *operator.Operator
	Journal  *journal.Journal
	// Policy is the policy in force: its access lists say who may give commands.
	Policy *policy.Policy
	// Surface names where the commands come from ("telegram", "console"); it is
	// recorded with every task.
	Surface string
	// Agent, when set, takes an operator's plain text (a line that is not a
	// command) and turns it into tool calls. Nil: plain text gets a usage error
	// that says how to configure a model (NoModel).
	Agent Agent
	// Reviewer makes /review's links to the review page; nil: the bot serves
	// no review page, and /review says so.
	Reviewer Reviewer
}

// Reviewer makes the link of the review page that shows approval apID, whose
// payload hashes to sha, to user alone (review.Linker).
type Reviewer interface {
	ReviewLink(apID, sha string, user policy.UserID) string
}

// Agent is the model layer as the handler sees it. Chat runs one turn of the
// conversation in chat, within a task already started: the model's calls go through
// the operator. It returns what to tell the person; the approvals its calls asked
// for reach the surfaces as the operator's events.
type Agent interface {
	Chat(ctx context.Context, taskID, chat, text string) (reply string, err error)
	// Stop cancels the turn running in chat, and reports whether there was one;
	// the turn itself tells the chat it stopped.
	Stop(chat string) bool
	// Reset forgets what the chat's conversation so far was (an agent CLI's
	// session, a model's recent exchanges): the next message starts afresh.
	Reset(ctx context.Context, chat string) error
}

// Reply is what a command answers.
type Reply struct {
	// Text is what to tell the person; empty when an approval's card says it
	// all (the operator's ApprovalNeeded event brings it to the surfaces).
	Text string
	// Result is the tool result behind the reply, when there is one.
	Result *action.Result
	// Listed are the operations a list names, in its order; Pending marks the
	// list of what waits for a person (/pending), whose surface may put a
	// decision's buttons beside each.
	Listed  []journal.Operation
	Pending bool
	// StepUp asks the person for the second factor the operator refused an
	// approval without (a code where a passkey is asked now): nothing was
	// recorded, and Text says so.
	StepUp *CodePrompt
}

// Approval is what an approver must see to decide: the exact payload and its hash.
type Approval struct {
	journal.Approval
	Operation journal.Operation
	Verdict   string
	// Approvers are who may decide: the approvers of the policy when the task
	// started, the same list the decision is checked against.
	Approvers []policy.UserID
	// Shown is what the tool says an approver must see of the payload
	// (tools.ShowOf).
	Shown tools.Shown
	// AskedBy names the agent that asked, for a task no person started (an
	// MCP session: its client and session, the task's summary); "" for a
	// person's request, whose chat the card answers.
	AskedBy string
	// Task is the task that asked.
	Task journal.Task
	// Escalation is who the approval goes to once nobody decided it in time
	// (they are among Approvers once it is escalated).
	Escalation []policy.UserID
	// Editable is whether an approver may correct the payload's text before
	// approving it (the tool is a tools.Reviser): the card offers an Edit.
	Editable bool
	// Factor is the second factor the operator asks of each approver now
	// (operator.StepUpOf): what the approval asked when it was made (its
	// StepUp), or more where a policy asks more since. Cards and the review
	// page show and ask this one.
	Factor policy.Factor
}

// Shows reports whether the approval is shown to user: one of Approvers, the
// escalation list included once it is escalated. Cards go to them, and the
// review page and /review show the payload to them alone.
func (a Approval) Shows(user policy.UserID) bool { return slices.Contains(a.Approvers, user) }

// ErrNotOperator is returned, with no other effect, for a user who may not operate.
var ErrNotOperator = errors.New("not an operator")

// Request is one command line from a user in a chat.
type Request struct {
	User policy.UserID
	Chat string
	Line string
	// Origin names where the line came from (e.g. the Telegram message that
	// carried it). A line whose origin was seen before continues the task it
	// started, if a stop left it short of its card, and otherwise returns
	// journal.ErrDuplicate and does nothing.
	Origin string
	// Attachment is the Telegram file_id of a file that came with the line (a
	// photo or a document whose caption is the command), "" for none.
	Attachment string
}

// Handle parses and runs one command line. Parse errors come back wrapping
// ErrUsage; a user who is not an operator gets ErrNotOperator, except for
// /whoami (and /start), which answers anyone with their own id and roles.
func (h *Handler) Handle(ctx context.Context, req Request) (Reply, error) {
	user := req.User
	if c, err := Parse(req.Line); err == nil && ForApprovers(c.Name) && h.mayApproveHere(user) {
		return h.approverCommand(ctx, req, c)
	} else if err == nil && (c.Name == "whoami" || c.Name == "start") {
		return Reply{Text: WhoAmI(h.Policy.Access, user)}, nil // anyone may learn their own id and roles
	}
	if !h.Policy.Access.IsOperator(user) {
		return Reply{}, ErrNotOperator
	}
	if !strings.HasPrefix(strings.TrimLeft(req.Line, " \t"), "/") && strings.TrimSpace(req.Line) != "" {
		if h.Agent == nil {
			return Reply{}, fmt.Errorf("%w: %s", ErrUsage, NoModel)
		}
		return h.chat(ctx, req)
	}
	c, err := Parse(req.Line)
	if err != nil {
		return Reply{}, err
	}
	switch c.Name {
	case "send", "publish", "photo", "document", "draft", "edit", "delete", "pin", "unpin":
		return h.call(ctx, req, c)
	case "ops":
		return h.list(ctx, journal.Filter{Limit: 10}, "No operations yet.")
	case "pending":
		r, err := h.list(ctx, journal.Filter{States: []journal.State{journal.AwaitingApproval, journal.Unknown, journal.NotDelivered, journal.RetryWait}},
			"Nothing waits for approval or verification.")
		r.Pending = true
		return r, err
	case "resolve":
		r, err := h.Operator.Resolve(ctx, c.OpID, c.Delivered, fmt.Sprint(user))
		return h.outcome(ctx, c.OpID, r, err)
	case "retry":
		r, err := h.Operator.Retry(ctx, c.OpID)
		return h.outcome(ctx, c.OpID, r, err)
	case "cancel":
		r, err := h.Operator.Cancel(ctx, c.OpID, fmt.Sprint(user))
		return h.outcome(ctx, c.OpID, r, err)
	case "stop":
		switch {
		case h.Agent == nil:
			return Reply{Text: "No model is configured, so nothing runs that /stop could end."}, nil
		case !h.Agent.Stop(req.Chat):
			return Reply{Text: "Nothing is running in this chat."}, nil
		}
		return Reply{}, nil // the stopped turn says so itself
	case "amend", "grant", "grants", "revoke", "code", "review":
		return Reply{Text: fmt.Sprintf("/%s is for approvers, and you are not one.", c.Name)}, nil
	case "new":
		if h.Agent == nil {
			return Reply{Text: "No model is configured, so there is no conversation to start afresh."}, nil
		}
		if err := h.Agent.Reset(ctx, req.Chat); err != nil {
			return Reply{}, err
		}
		return Reply{Text: "Started afresh: your next message begins a new conversation."}, nil
	}
	return Reply{Text: Help()}, nil
}

func (h *Handler) call(ctx context.Context, req Request, c Command) (Reply, error) {
	tool := map[string]string{"send": "commit_send_message", "publish": "commit_publish_post", "draft": "prepare_reply",
		"photo": "commit_send_photo", "document": "commit_send_document", "edit": "commit_edit_message", "delete": "commit_delete_message", "pin": "commit_pin_message", "unpin": "commit_unpin_message"}[c.Name]
	args, _ := json.Marshal(map[string]string{"chat_id": c.Target, "text": c.Text})
	switch c.Name {
	case "draft":
		args, _ = json.Marshal(map[string]string{"text": c.Text})
	case "edit":
		args, _ = json.Marshal(map[string]string{"operation_id": c.OpID, "text": c.Text})
	case "delete", "pin", "unpin":
		args, _ = json.Marshal(map[string]string{"operation_id": c.OpID})
	case "photo", "document":
		file, caption := tools.TelegramFile+req.Attachment, c.Text
		if req.Attachment == "" {
			file, caption = cut(c.Text)
		}
		if file == "" {
			return Reply{}, usageErr(c.Name)
		}
		args, _ = json.Marshal(map[string]string{"chat_id": c.Target, "file": file, "caption": caption})
	}
	// The task and its call are journaled in one transaction: a crash before it
	// leaves nothing, and the replay starts afresh.
	_, r, err := h.Operator.Begin(ctx, journal.Task{Requester: req.User, Chat: req.Chat, Summary: "/" + c.Name, Origin: req.Origin, Surface: h.Surface},
		operator.Call{Tool: tool, Args: args})
	if errors.Is(err, journal.ErrDuplicate) {
		task, ops, err := h.replayed(ctx, req)
		if err != nil || len(ops) > 0 {
			return h.continueTask(ctx, ops, err)
		}
		return h.callIn(ctx, task, tool, args) // a task stored before its call (an older process)
	}
	return h.answer(ctx, tool, r, err)
}

func (h *Handler) callIn(ctx context.Context, task journal.Task, tool string, args json.RawMessage) (Reply, error) {
	r, err := h.Operator.Call(ctx, task.ID, operator.Call{Tool: tool, Args: args})
	return h.answer(ctx, tool, r, err)
}

func (h *Handler) answer(ctx context.Context, tool string, r action.Result, err error) (Reply, error) {
	if errors.Is(err, operator.ErrUnknownTool) {
		return Reply{Text: fmt.Sprintf("The policy does not offer %s.", tool)}, nil
	}
	return h.outcome(ctx, r.OperationID, r, err)
}

// chat hands plain text to the agent in a task of its own.
func (h *Handler) chat(ctx context.Context, req Request) (Reply, error) {
	if secret.Contains(req.Line) {
		return Reply{Text: "That message contains what looks like a secret (a bot token or an API key), so it was not sent to the model. Send it without the secret."}, nil
	}
	task, err := h.Operator.StartTask(ctx, journal.Task{Requester: req.User, Chat: req.Chat, Summary: "chat", Origin: req.Origin, Surface: h.Surface})
	if errors.Is(err, journal.ErrDuplicate) {
		// A model's turn is never run twice; what it left on the way to a card is.
		_, ops, err := h.replayed(ctx, req)
		return h.continueTask(ctx, ops, err)
	}
	if err != nil {
		return Reply{}, err
	}
	text, err := h.Agent.Chat(ctx, task.ID, req.Chat, req.Line)
	if err != nil {
		return Reply{}, err
	}
	reply := Reply{Text: text}
	// An auto-approved commit may have met an unknown outcome during the turn: its
	// result goes with the reply, so the surface can offer to resolve it.
	unknown, err := h.Journal.Operations(ctx, journal.Filter{TaskID: task.ID, States: []journal.State{journal.Unknown}})
	if err != nil {
		return Reply{}, err
	}
	if len(unknown) > 0 && unknown[0].Result != nil {
		r := *unknown[0].Result
		reply.Result = &r
	}
	return reply, nil
}

// replayed finds the task a request started before (its origin was seen: a
// replayed update) and its operations, newest first.
func (h *Handler) replayed(ctx context.Context, req Request) (journal.Task, []journal.Operation, error) {
	task, err := h.Journal.TaskByOrigin(ctx, req.Origin)
	if err != nil {
		return task, nil, err
	}
	ops, err := h.Journal.Operations(ctx, journal.Filter{TaskID: task.ID})
	return task, ops, err
}

// continueTask takes up a replayed request where the process before stopped: an
// operation it prepared or verified goes on to its approval (whose card comes
// with the operator's event, as every card does; one already waiting is the
// owner's watch's to show). What tells the person nothing new is
// journal.ErrDuplicate: the request was handled.
func (h *Handler) continueTask(ctx context.Context, ops []journal.Operation, err error) (Reply, error) {
	if err != nil {
		return Reply{}, err
	}
	var reply Reply
	for _, op := range ops {
		var r action.Result
		switch op.State {
		case journal.Prepared, journal.Verified:
			if r, err = h.Operator.Continue(ctx, op.ID); err != nil {
				return Reply{}, err
			}
			if r.Status == action.StatusSucceeded && r.SideEffect == action.SideEffectNone {
				continue // a draft of the turn: finished when it was made
			}
		default:
			continue
		}
		one, err := h.outcome(ctx, op.ID, r, nil)
		if err != nil {
			return Reply{}, err
		}
		reply.Text = strings.TrimSpace(reply.Text + "\n" + one.Text)
		reply.Result = one.Result
	}
	if reply.Text == "" {
		return Reply{}, fmt.Errorf("command: %w", journal.ErrDuplicate)
	}
	return reply, nil
}

// Approval returns what an approver must see of the approval operation opID waits
// on, or journal.ErrNotFound when it waits on none.
func (h *Handler) Approval(ctx context.Context, opID string) (Approval, error) {
	a, err := h.Operator.PendingApproval(ctx, opID)
	if err != nil {
		return Approval{}, err
	}
	op, err := h.Journal.Operation(ctx, opID)
	if err != nil {
		return Approval{}, err
	}
	task, err := h.Journal.Task(ctx, op.TaskID)
	if err != nil {
		return Approval{}, err
	}
	tool, _ := h.Operator.Tool(op.Tool)
	_, editable := tool.(tools.Reviser)
	approvers, escalation := h.Operator.Approvers(task), h.Operator.Escalation(task)
	if !a.Escalated.IsZero() {
		approvers = append(approvers, escalation...)
	}
	var askedBy string
	if task.Requester == 0 {
		askedBy = task.Summary
	}
	return Approval{Approval: a, Operation: op, Verdict: op.Verdict, Approvers: approvers,
		Shown: tools.ShowOf(tool, op.Payload), AskedBy: askedBy, Task: task, Escalation: escalation, Editable: editable,
		Factor: h.Operator.StepUpOf(task, op, a)}, nil
}

// outcome turns a result into a reply, with the approval to ask for when pending.
func (h *Handler) outcome(ctx context.Context, opID string, r action.Result, err error) (Reply, error) {
	if errors.Is(err, journal.ErrNotFound) && opID != "" {
		return Reply{Text: fmt.Sprintf("No operation %s.", opID)}, nil
	}
	if err != nil {
		if text, ok := refusal(err); ok {
			return Reply{Text: text}, nil
		}
		return Reply{}, err
	}
	if r.Status == action.StatusPending {
		return Reply{Result: &r}, nil // its card is the reply
	}
	return Reply{Text: Describe(r), Result: &r}, nil
}

// Decide records user's tap or answer on an approval and describes the
// outcome. An approval refused for want of a second factor is a reply whose
// StepUp asks for the factor the operator named.
func (h *Handler) Decide(ctx context.Context, approvalID string, user policy.UserID, approve bool) (Reply, error) {
	d, err := h.Operator.Record(ctx, approvalID, user, approve)
	if err != nil {
		return h.decideRefused(ctx, d, err)
	}
	r, err := h.Operator.Proceed(ctx, d)
	if err != nil {
		return Reply{}, err
	}
	return Reply{Text: Describe(r), Result: &r}, nil
}

// decideRefused is the reply to a decision the operator refused with err:
// its words and, where it asks a second factor, the prompt for that factor.
func (h *Handler) decideRefused(ctx context.Context, d operator.Decision, err error) (Reply, error) {
	text, ok := refusal(err)
	if !ok {
		return Reply{}, err
	}
	var missing *journal.StepUpError
	if !errors.As(err, &missing) {
		return Reply{Text: text}, nil
	}
	p, err := h.codePrompt(ctx, d.Approval, missing.Asked)
	return Reply{Text: text, StepUp: p}, err
}

// refusal words the operator's refusals for a person; other errors are not theirs.
func refusal(err error) (string, bool) {
	var r *operator.Refusal
	switch {
	case errors.As(err, &r):
		return "Refused: " + r.Words + ".", true
	case errors.Is(err, journal.ErrNotFound):
		return "Refused: no such operation or approval.", true
	}
	return "", false
}

// Describe is a result in a sentence or two for the person who asked.
func Describe(r action.Result) string {
	switch {
	case r.Status == action.StatusPending && r.Cause == action.CauseQuorum:
		return fmt.Sprintf("%s is waiting for approval: %s.", r.OperationID, r.Reason)
	case r.Status == action.StatusPending && r.Cause == action.CauseChanged:
		return fmt.Sprintf("%s is waiting for approval again: %s.", r.OperationID, r.Reason)
	case r.Status == action.StatusPending:
		return fmt.Sprintf("%s is waiting for approval.", r.OperationID)
	case r.Status == action.StatusSucceeded && r.Draft != "":
		return fmt.Sprintf("Draft %s (nothing sent):\n%s", r.OperationID, r.Draft)
	case r.Status == action.StatusSucceeded && r.Evidence != nil && changed[r.Action] != "":
		return fmt.Sprintf("%s message %s in %s (%s).", changed[r.Action], ids(r.Evidence.MessageIDs), r.Evidence.ChatID, r.OperationID)
	case r.Status == action.StatusSucceeded && r.Evidence != nil && r.Evidence.HTTPStatus != 0:
		return strings.TrimSuffix(fmt.Sprintf("%s done: HTTP %d, ref %s", r.OperationID, r.Evidence.HTTPStatus, r.Evidence.Ref), ", ref ") + "."
	case r.Status == action.StatusSucceeded && r.Evidence != nil:
		return fmt.Sprintf("Sent %s to %s (message %s).", r.OperationID, r.Evidence.ChatID, ids(r.Evidence.MessageIDs))
	case r.Status == action.StatusSucceeded:
		return fmt.Sprintf("%s done. %s", r.OperationID, capitalize(r.Reason))
	case r.NextAction == action.NextVerify:
		return fmt.Sprintf("Outcome unknown for %s: it will not be resent. %s", r.OperationID, capitalize(r.Reason))
	case r.NextAction == action.NextRepair:
		return fmt.Sprintf("%s needs a repair. %s", r.OperationID, capitalize(r.Reason))
	case r.NextAction == action.NextRetry:
		return fmt.Sprintf("%s can be sent again. %s", r.OperationID, capitalize(r.Reason))
	}
	return fmt.Sprintf("%s stopped. %s", r.OperationID, capitalize(r.Reason))
}

// changed is what a success did to a message already sent, by the action.
var changed = map[string]string{action.EditMessage: "Edited", action.DeleteMessage: "Deleted",
	action.PinMessage: "Pinned", action.UnpinMessage: "Unpinned"}

func ids[T ~int64](v []T) string {
	s := make([]string, len(v))
	for i, id := range v {
		s[i] = fmt.Sprint(id)
	}
	return strings.Join(s, ", ")
}

func capitalize(s string) string {
	if s == "" {
		return s
	}
	r, n := utf8.DecodeRuneInString(s)
	return strings.ToUpper(string(r)) + s[n:]
}

func (h *Handler) list(ctx context.Context, f journal.Filter, empty string) (Reply, error) {
	ops, err := h.Journal.Operations(ctx, f)
	if err != nil {
		return Reply{}, err
	}
	if len(ops) == 0 {
		return Reply{Text: empty}, nil
	}
	var b strings.Builder
	for _, op := range ops {
		b.WriteString(Line(op) + "\n")
	}
	return Reply{Text: strings.TrimSuffix(b.String(), "\n"), Listed: ops}, nil
}

// Line is one operation on one line: id, state, action, target, an excerpt, time.
func Line(op journal.Operation) string {
	what := op.Payload.Action
	if op.Payload.Target != "" {
		what += " to " + op.Payload.Target
	}
	return fmt.Sprintf("%s %s %s %q %s", op.ID, op.State, what, Excerpt(op.Payload.Text, 32), op.Updated.Format(time.DateTime))
}

// Excerpt is the first n runes of s on one line, with an ellipsis when cut.
func Excerpt(s string, n int) string {
	s = strings.Join(strings.Fields(s), " ")
	if utf8.RuneCountInString(s) <= n {
		return s
	}
	return string([]rune(s)[:n]) + "…"
}
