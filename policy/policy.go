// Package policy is the typed form of policies.yaml: which tools exist and what side
// effect each has, the retry, repair and wait budgets, the loop guard, approval rules
// and who may operate and approve. Loading is strict so that a typo in the file is an
// error at start, never a silently different behaviour in production.
package policy

import (
	"errors"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"time"
)

// SideEffect is what a tool does to the world, as the policy declares it.
type SideEffect string

// The side effects a tool may declare.
const (
	SideEffectNone      SideEffect = "none"      // prepare_* tools: drafts, plans
	SideEffectCommitted SideEffect = "committed" // commit_* tools: sends, posts
)

// Approval says whether a commit needs a human's tap.
type Approval string

// The approval settings a tool may declare.
const (
	ApprovalRequired Approval = "required"
	ApprovalNone     Approval = "none"
)

// Tool is one tool's entry in the policy.
type Tool struct {
	SideEffect SideEffect `json:"side_effect"`
	Approval   Approval   `json:"approval"`
	// Idempotency is what repeating a commit does ("" for a prepare_* tool, and
	// Additive for a commit_* tool that does not say).
	Idempotency Idempotency `json:"idempotency,omitempty"`
	// HTTP, when set, declares the tool as one HTTP request (see HTTP); its
	// Idempotency is then the declaration's Class.
	HTTP *HTTP `json:"http,omitempty"`
	// Approvals is how many different approvers must approve each commit (a
	// quorum); 0 or 1: one (see approvals.go).
	Approvals int `json:"approvals,omitempty"`
	// StepUp is the second factor each approver of a commit gives beside the
	// tap (see stepup.go); NoFactor: the tap alone.
	StepUp Factor `json:"step_up,omitempty"`
}

// Idempotency is a commit tool's class: what a repeat of it does, and so what
// may be done when its outcome is unknown.
type Idempotency string

// The idempotency classes.
const (
	// Additive: each call adds to the world (a send, a poll). An unknown outcome
	// goes to a person, and the call is never issued again.
	Additive Idempotency = "additive"
	// StateSetting: a call sets a state that a repeat sets again (an edit). An
	// unknown outcome is settled by issuing the same call once more and reading
	// its answer.
	StateSetting Idempotency = "state_setting"
)

// Backoff shapes the wait before an automatic retry when the service gave no
// retry_after: Base doubled per attempt, capped at Cap, minus up to Jitter of it.
type Backoff struct {
	Base   time.Duration `json:"base"`
	Cap    time.Duration `json:"cap"`
	Jitter float64       `json:"jitter"`
}

// validate reports the backoff's problems under field, through add.
func (b Backoff) validate(field string, add func(field, format string, args ...any)) {
	if b.Base <= 0 {
		add(field+".base", "must be positive, got %s", b.Base)
	}
	if b.Cap < b.Base {
		add(field+".cap", "must be at least %s.base (%s), got %s", field, b.Base, b.Cap)
	}
	if !(b.Jitter >= 0 && b.Jitter < 1) { // NaN too: a snapshot could not store it
		add(field+".jitter", "must be in [0, 1), got %g", b.Jitter)
	}
}

// UserID is a person as a surface knows them: a Telegram user id today. It is
// its own type, apart from the chat ids that share Telegram's int64, so that a
// person is never taken for a chat, and a second surface's ids are a change
// of this type the compiler walks through.
type UserID int64

// Access lists the Telegram user ids allowed to give commands and to approve.
type Access struct {
	Operators []UserID `json:"operators"`
	Approvers []UserID `json:"approvers"`
	// Escalation are the approvers an approval also goes to once nobody
	// decided it within escalate_after of its time (see approvals.go).
	Escalation []UserID `json:"escalation,omitempty"`
}

// IsOperator reports whether id may give commands.
func (a Access) IsOperator(id UserID) bool { return slices.Contains(a.Operators, id) }

// IsApprover reports whether id may approve or reject a commit.
func (a Access) IsApprover(id UserID) bool { return slices.Contains(a.Approvers, id) }

// AutoApprove is a narrow exception to approval: Tool to one of Chats needs no tap.
type AutoApprove struct {
	Tool  string   `json:"tool"`
	Chats []string `json:"chats"`
}

// Policy is the whole policy. The operator snapshots it with each task, so a policy
// edited while a task is in flight never widens what that task may do; the policy
// in force where it is sent may still narrow it (a tap asked for, an approver
// removed).
type Policy struct {
	Tools        map[string]Tool `json:"tools"`
	RetryBudget  int             `json:"retry_budget"`
	RepairBudget int             `json:"repair_budget"`
	WaitBudget   time.Duration   `json:"wait_budget"`
	Backoff      Backoff         `json:"backoff"`
	LoopGuard    LoopGuard       `json:"loop_guard"`
	ApprovalTTL  time.Duration   `json:"approval_ttl"`
	Access       Access          `json:"access"`
	AutoApprove  []AutoApprove   `json:"auto_approve"`
	// EnvelopeTTL is how long a resolved unknown-outcome envelope is kept in the
	// vault before gc may remove it. Unresolved envelopes are never removed.
	EnvelopeTTL time.Duration `json:"envelope_ttl"`
	// Verify configures the verifier's checks (see verify.go).
	Verify Verify `json:"verify"`
	// Files bounds what the file tools may read (see files.go).
	Files Files `json:"files"`
	// Model configures the model layer and its recovery (see model.go). Use
	// Models, which fills in a snapshot taken before the section existed.
	Model Model `json:"model"`
	// Reminders is what the sweep does about unknown outcomes and old notes (see
	// reminders.go). Use Remind, which fills in a policy without the section.
	Reminders *Reminders `json:"reminders,omitempty"`
	// Quorum asks more than one approver for commits to some targets;
	// EscalateAfter is the share of ApprovalTTL after which a card nobody
	// decided goes to Access.Escalation too (0: never); GrantMax is the longest
	// window grant an approver may give (0: none). See approvals.go.
	Quorum        []Quorum      `json:"quorum,omitempty"`
	EscalateAfter float64       `json:"escalate_after,omitempty"`
	GrantMax      time.Duration `json:"grant_max,omitempty"`
	// SelfApproval false: nobody may approve a request of their own, by a
	// tap, a vote of a quorum or a grant; they may still reject it. Unset (a
	// snapshot from before the key, a file without it): they may. See
	// SelfApprovalAllowed.
	SelfApproval *bool `json:"self_approval,omitempty"`
}

// Models is the policy's model section; a task snapshot stored before the section
// existed has none, and gets the defaults.
func (p *Policy) Models() Model {
	if p.Model == (Model{}) {
		return DefaultModel()
	}
	return p.Model
}

// Defaults for keys the file leaves unset. An explicit zero in the file is kept.
const (
	DefaultRetryBudget  = 2
	DefaultRepairBudget = 1
	DefaultWaitBudget   = 5 * time.Minute
	DefaultBackoffBase  = time.Second
	DefaultBackoffCap   = 30 * time.Second
	DefaultJitter       = 0.2
	DefaultApprovalTTL  = 24 * time.Hour
	DefaultEnvelopeTTL  = 7 * 24 * time.Hour
)

// Tool returns the named tool's entry and whether the policy declares it.
func (p *Policy) Tool(name string) (Tool, bool) {
	t, ok := p.Tools[name]
	return t, ok
}

// ToolNames returns the declared tool names, sorted.
func (p *Policy) ToolNames() []string {
	names := make([]string, 0, len(p.Tools))
	for n := range p.Tools {
		names = append(names, n)
	}
	slices.Sort(names)
	return names
}

// NeedsApproval reports whether a call of tool to target must wait for a human's tap:
// the tool requires approval and no auto_approve rule covers the target. Chats compare
// as the chats they name (see NormalizeTarget): a rule for "222" covers "0222".
func (p *Policy) NeedsApproval(tool, target string) bool {
	if t, ok := p.Tools[tool]; ok && (t.SideEffect == SideEffectNone || t.Approval == ApprovalNone) {
		return false
	}
	for _, r := range p.AutoApprove {
		if r.Tool == tool && slices.ContainsFunc(r.Chats, func(c string) bool { return sameTarget(c, target) }) {
			return false
		}
	}
	return true
}

// ApplyEnv replaces the access lists with BOT_OPERATORS and BOT_APPROVERS
// (comma-separated user ids) when they are set. It returns an error naming the
// variable when an id is not a number, and changes nothing in that case.
func (p *Policy) ApplyEnv(getenv func(string) string) error {
	ops, err := envIDs(getenv, "BOT_OPERATORS")
	if err != nil {
		return err
	}
	apps, err := envIDs(getenv, "BOT_APPROVERS")
	if err != nil {
		return err
	}
	if ops != nil {
		p.Access.Operators = ops
	}
	if apps != nil {
		p.Access.Approvers = apps
	}
	return nil
}

func envIDs(getenv func(string) string, name string) ([]UserID, error) {
	v, ok := strings.TrimSpace(getenv(name)), getenv(name) != ""
	if !ok {
		return nil, nil
	}
	ids := []UserID{}
	for _, f := range strings.Split(v, ",") {
		f = strings.TrimSpace(f)
		if f == "" {
			continue
		}
		id, err := strconv.ParseInt(f, 10, 64)
		if err != nil {
			return nil, fmt.Errorf("policy: %s: %q is not a Telegram user id", name, f)
		}
		ids = append(ids, UserID(id))
	}
	return ids, nil
}

// Validate checks the rules that span fields. Parse calls it; a Policy built in code
// should call it too. The error is an Errors list naming each field.
func (p *Policy) Validate() error {
	return p.validate(nil, func(string) bool { return false })
}

// validate checks p; lines gives the line of each key for the errors, and unread
// says which fields the file gave but could not be read (see Verify.validate).
func (p *Policy) validate(lines map[string]int, unread func(field string) bool) error {
	var errs Errors
	add := func(field, format string, args ...any) {
		errs = append(errs, &FieldError{Line: lines[field], Field: field, Msg: fmt.Sprintf(format, args...)})
	}
	if len(p.Tools) == 0 {
		add("tools", "missing: declare at least one tool")
	}
	for _, name := range p.ToolNames() {
		validateTool(name, p.Tools[name], add)
	}
	for field, v := range map[string]int{"retry_budget": p.RetryBudget, "repair_budget": p.RepairBudget} {
		if v < 0 {
			add(field, "must not be negative, got %d", v)
		}
	}
	if p.WaitBudget < 0 {
		add("wait_budget", "must not be negative, got %s", p.WaitBudget)
	}
	p.Backoff.validate("backoff", add)
	if p.ApprovalTTL <= 0 {
		add("approval_ttl", "must be positive, got %s", p.ApprovalTTL)
	}
	if p.EnvelopeTTL <= 0 {
		add("envelope_ttl", "must be positive, got %s", p.EnvelopeTTL)
	}
	p.Model.validate(add)
	p.Remind().validate(add)
	for i, r := range p.AutoApprove {
		field := fmt.Sprintf("auto_approve[%d]", i)
		t, ok := p.Tools[r.Tool]
		switch {
		case !ok:
			add(field+".tool", "missing tool: %q is not declared under tools", r.Tool)
		case t.SideEffect != SideEffectCommitted:
			add(field+".tool", "%q has no side effect to approve", r.Tool)
		}
		if len(r.Chats) == 0 {
			add(field+".chats", "must list at least one chat id")
		}
		for j, c := range r.Chats {
			if ok && t.HTTP != nil {
				// An HTTP tool's audience is the host its URL names.
				if !t.HTTP.AllowsHost(c) || c != strings.ToLower(c) {
					add(fmt.Sprintf("%s.chats[%d]", field, j), "want one of the tool's hosts %q, got %q", t.HTTP.Hosts, c)
				}
				continue
			}
			if _, err := NormalizeTarget(c); err != nil {
				add(fmt.Sprintf("%s.chats[%d]", field, j), "want a chat id or @username, got %q", c)
			}
		}
	}
	p.Verify.validate(p.Tools, unread, add)
	p.validateApprovals(add)
	p.validateStepUp(add)
	if len(errs) == 0 {
		return nil
	}
	errs.sort()
	return errs
}

func validateTool(name string, t Tool, add func(field, format string, args ...any)) {
	field := "tools." + name
	switch {
	case strings.HasPrefix(name, "prepare_"):
		if t.HTTP != nil {
			add(field+".http", "an HTTP request changes the world: the tool's name starts with commit_")
		}
		if t.SideEffect != SideEffectNone {
			add(field+".side_effect", "a prepare_* tool must be %q, got %q", SideEffectNone, t.SideEffect)
		}
		if t.Approval == ApprovalRequired {
			add(field+".approval", "a prepare_* tool has nothing to approve")
		}
		if t.Idempotency != "" {
			add(field+".idempotency", "a prepare_* tool changes nothing: it has no idempotency class")
		}
	case strings.HasPrefix(name, "commit_"):
		if t.HTTP != nil {
			t.HTTP.validate(field+".http", add)
			if t.Idempotency != "" && t.Idempotency != t.HTTP.Class() {
				add(field+".idempotency", "the http block makes it %q (an Idempotency-Key or a reconcile read settles a repeat; neither adds), not %q", t.HTTP.Class(), t.Idempotency)
			}
		}
		if t.SideEffect != SideEffectCommitted {
			add(field+".side_effect", "a commit_* tool must be %q, got %q", SideEffectCommitted, t.SideEffect)
		}
		if t.Approval == "" {
			add(field+".approval", "missing: say %q or %q", ApprovalRequired, ApprovalNone)
		}
	default:
		add(field, "a tool name starts with prepare_ or commit_")
	}
}

// Class is the idempotency class of the named commit tool: as declared, else
// Additive, the class that never repeats a call.
func (p *Policy) Class(tool string) Idempotency {
	if c := p.Tools[tool].Idempotency; c != "" {
		return c
	}
	return Additive
}

// FieldError is one problem in a policy, located by field path and, when it came
// from a file, by line.
type FieldError struct {
	Line  int
	Field string
	Msg   string
}

func (e *FieldError) Error() string {
	if e.Line > 0 {
		return fmt.Sprintf("line %d: %s: %s", e.Line, e.Field, e.Msg)
	}
	return fmt.Sprintf("%s: %s", e.Field, e.Msg)
}

// Errors is every problem found in one policy, in file order.
type Errors []*FieldError

func (es Errors) Error() string {
	msgs := make([]string, len(es))
	for i, e := range es {
		msgs[i] = e.Error()
	}
	return strings.Join(msgs, "\n")
}

func (es Errors) sort() {
	slices.SortStableFunc(es, func(a, b *FieldError) int {
		if a.Line != b.Line {
			return a.Line - b.Line
		}
		return strings.Compare(a.Field, b.Field)
	})
}

// normalizeTargets writes every chat the policy names as NormalizeTarget does, so
// that what the policy shows and stores is what the tools put in payloads. It leaves
// alone what Validate would refuse.
func (p *Policy) normalizeTargets() {
	norm := func(s *string) {
		if t, err := NormalizeTarget(*s); err == nil {
			*s = t
		}
	}
	for i := range p.AutoApprove {
		for j := range p.AutoApprove[i].Chats {
			norm(&p.AutoApprove[i].Chats[j])
		}
	}
	for i := range p.Quorum {
		for j := range p.Quorum[i].Chats {
			norm(&p.Quorum[i].Chats[j])
		}
	}
	for i := range p.Verify.Rules {
		if p.Verify.Rules[i].Target != "" {
			norm(&p.Verify.Rules[i].Target)
		}
	}
}

// ErrNoFile is returned by Load when the policy file does not exist.
var ErrNoFile = errors.New("policy file not found")
