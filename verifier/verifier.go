// Package verifier is the read-only check between prepare and approval: it looks at a
// prepared payload and says pass, repair (with reasons) or stop. It can read, never
// send or write: nothing it imports can commit.
package verifier

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/countersign/countersign/policy"
)

// Decision is the verifier's answer.
type Decision string

// The three answers.
const (
	Pass   Decision = "pass"
	Repair Decision = "repair"
	Stop   Decision = "stop"
)

// Input is what the verifier sees of a prepared payload.
type Input struct {
	Tool      string
	Action    string
	Target    string
	Text      string
	ParseMode string
	// Policy, when set, is the verify section of the task's policy snapshot, used
	// in place of the Checker's: an edit of the policy never changes the checks of a
	// task already under way. Nil: the Checker's own.
	Policy *policy.Verify
	// Model, when set, is the model section of the task's policy snapshot: a
	// model check runs under its retries and budgets. Nil: the model's own.
	Model *policy.Model
	// SetsState marks a state-setting action (an edit, a delete): the duplicate
	// check, which guards against adding the same message twice, does not apply.
	SetsState bool
	// NoText marks an action that sends no text (a delete, a photo without a
	// caption): the checks of a text (empty, length, markup, links, house
	// rules) do not apply.
	NoText bool
	// URL, when set, is the address of an HTTP request: Target is its host, not
	// a chat, and Text its body. Schema checks the address (absolute, https
	// unless it is this machine, on Target) in place of a chat and Telegram's
	// limits; links applies the domain lists to its host.
	URL string
	// Caption marks a text sent as a file's caption, which Telegram holds to
	// 1024 characters rather than a message's 4096.
	Caption bool
	// Files are the files the action sends, checked against Telegram's
	// limits; a payload with files is a duplicate only of one with the same
	// files.
	Files []File
	// Options are a poll's answers, checked against Telegram's limits; Text
	// is then its question.
	Options []string
	// Task and Chat are the task that asks and the chat it came from ("" for
	// one that came from no chat, an MCP client's): a payload a person rejected
	// in either, asked again, stops (see rejected.go).
	Task, Chat string
	// Content is everything of the payload but its text, as the caller's digest
	// (the tools' Content): with the text as its recipient reads it, what tells
	// the payload asked again from one rejected. "" leaves that check out.
	Content string
	// Changed is what the request says changed since a rejection of the same
	// payload; when set, a rejection does not stop it.
	Changed string
	// Operation is the operation the payload is already, when it is checked
	// again (asked again after what its card showed changed): the duplicate
	// check leaves it out, as it is no duplicate of itself. "" for a new call.
	Operation string
}

// File is one file an action sends, as the checks see it.
type File struct {
	Kind   string // "photo" or "document"
	Name   string
	Size   int64
	SHA256 string
}

// Verdict is a decision with its reasons and the number of checks that ran.
type Verdict struct {
	Decision Decision
	Reasons  []string
	Checks   int
}

// Summary is a one-line account of the verdict, for the journal and approval cards.
func (v Verdict) Summary() string {
	if v.Decision == Pass {
		return fmt.Sprintf("pass (%d checks)", v.Checks)
	}
	return fmt.Sprintf("%s: %s", v.Decision, strings.Join(v.Reasons, "; "))
}

// History is read-only access to what was already sent or is waiting for approval.
type History interface {
	// Recent returns the payload texts sent (committed, unknown) or awaiting approval
	// to target since t whose SeenKey is key, and those whose key is not known
	// (a store may keep no keys, and return them all).
	Recent(ctx context.Context, target string, since time.Time, key string) ([]Sent, error)
	// Rejected returns the payloads a person rejected since t in task, or in
	// any task that came from chat (when chat is not ""), with their Content.
	Rejected(ctx context.Context, task, chat string, since time.Time) ([]Sent, error)
}

// Sent is one earlier payload to a target: its operation, text (in its parse mode,
// so that it is compared as its recipient saw it), journal state and time.
type Sent struct {
	OperationID, Text, ParseMode, State string
	At                                  time.Time
	// Files are the SHA-256 sums of the files it sent, in order.
	Files []string
	// Content is everything of the payload but its text (Input.Content), for
	// a rejected one.
	Content string
}

// Checker runs the checks on a payload: schema and links always, duplicates when it
// has a History and a duplicate window, the policy's rules that cover the payload,
// and the model for the tools under verify.model_check when it has a Model. The zero
// Checker is New(policy.Verify{}, nil, nil): schema and links only. A Checker never
// changes after New, so it is safe for concurrent use when its History and Model are.
type Checker struct {
	cfg     policy.Verify
	history History
	now     func() time.Time
	model   Model
}

// New returns a Checker for the policy's verify section. h may be nil (no duplicate
// check); now may be nil (time.Now). A cfg.DuplicateWindow of 0 turns the duplicate
// check off: policy.Parse fills in policy.DefaultDuplicateWindow when it is unset.
func New(cfg policy.Verify, h History, now func() time.Time) *Checker {
	return &Checker{cfg: cfg, history: h, now: now}
}

// WithModel returns a copy of c that also shows the payloads of the tools under
// verify.model_check to m, once every other check has passed.
func (c Checker) WithModel(m Model) *Checker {
	c.model = m
	return &c
}

// Check runs every check that applies to in and combines them: any stop is a Stop,
// else any repair is a Repair, else Pass. Each reason starts with its check's name.
func (c Checker) Check(ctx context.Context, in Input) Verdict {
	if in.Policy != nil {
		c.cfg = *in.Policy
	}
	p := newPayload(in)
	v := Verdict{Decision: Pass}
	for _, ch := range c.checks(in) {
		v.add(ch.name, ch.run(ctx, p))
	}
	if v.Decision == Pass && c.wantsModel(in.Tool) {
		v.add("model", c.modelCheck(ctx, in))
	}
	return v
}

func (v *Verdict) add(name string, fs []finding) {
	v.Checks++
	for _, f := range fs {
		v.Reasons = append(v.Reasons, name+": "+f.reason)
		if f.decision == Stop || v.Decision == Pass {
			v.Decision = f.decision
		}
	}
}

// check is one named check; run returns what it found wrong, nothing when it passes.
type check struct {
	name string
	run  func(ctx context.Context, p *payload) []finding
}

func (c Checker) checks(in Input) []check {
	cs := []check{{"schema", c.schema}}
	if !in.NoText || in.URL != "" { // an HTTP request's address is checked as a link
		cs = append(cs, check{"links", c.links})
	}
	// What adds to the world (a text, a file) is checked against what was
	// added before; what sets a state is not.
	if c.history != nil && c.cfg.DuplicateWindow > 0 && !in.SetsState && (!in.NoText || len(in.Files) > 0) {
		cs = append(cs, check{"duplicates", c.duplicates})
	}
	// A person's rejection stops the same payload asked again, unless the
	// request says what changed.
	if c.history != nil && c.cfg.RejectedWindow > 0 && in.Content != "" && in.Changed == "" {
		cs = append(cs, check{"rejected", c.rejected})
	}
	if in.NoText {
		return cs
	}
	if slices.ContainsFunc(c.cfg.Rules, func(r policy.Rule) bool { return r.Applies(in.Tool, in.Target) }) {
		cs = append(cs, check{"rules", c.rules})
	}
	return cs
}

func (c Checker) clock() time.Time {
	if c.now == nil {
		return time.Now()
	}
	return c.now()
}

// finding is one problem a check found and what it calls for: Repair or Stop.
type finding struct {
	decision Decision
	reason   string
}

func repairf(format string, args ...any) finding {
	return finding{Repair, fmt.Sprintf(format, args...)}
}

func stopf(format string, args ...any) finding {
	return finding{Stop, fmt.Sprintf(format, args...)}
}
