package agent

import (
	"context"
	_ "embed"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"strings"
	"time"

	"github.com/countersign/countersign/journal"
	"github.com/countersign/countersign/model"
	"github.com/countersign/countersign/policy"
	"github.com/countersign/countersign/vault"
	"github.com/countersign/countersign/verifier"
)

//go:embed reviewer.md
var reviewerPrompt string

// The Reviewer's defaults.
const (
	// MaxToolRounds is how many times the model may call tools before it must answer.
	MaxToolRounds = 3
	// ReviewMaxTokens is the output limit of each review request.
	ReviewMaxTokens = 1024
	// RecentOperations is how many operations read_operations returns at most.
	RecentOperations = 10
	// ReviewMaxWait bounds the waits between the requests of one review: a
	// command waits for its verdict, never for minutes.
	ReviewMaxWait = 10 * time.Second
)

// NotUnderstood is the reason of the Stop for an answer that is not the verdict
// object the Reviewer asks for.
const NotUnderstood = "model answer not understood"

// OperationReader reads the journal's recent operations to a target, newest first.
type OperationReader interface {
	RecentOperations(ctx context.Context, target string, limit int) ([]OperationInfo, error)
}

// OperationInfo is what the model sees of one earlier operation; Excerpt is masked.
type OperationInfo struct {
	ID      string    `json:"id"`
	Tool    string    `json:"tool"`
	State   string    `json:"state"`
	At      time.Time `json:"at"`
	Excerpt string    `json:"excerpt"`
}

// JournalReader reads operations from j.
func JournalReader(j *journal.Journal) OperationReader { return journalReader{j} }

type journalReader struct{ j *journal.Journal }

func (r journalReader) RecentOperations(ctx context.Context, target string, limit int) ([]OperationInfo, error) {
	ops, err := r.j.Operations(ctx, journal.Filter{Target: target, Limit: limit})
	if err != nil {
		return nil, err
	}
	infos := make([]OperationInfo, len(ops))
	for i, o := range ops {
		infos[i] = OperationInfo{ID: o.ID, Tool: o.Tool, State: string(o.State), At: o.Updated,
			Excerpt: vault.Excerpt(o.Payload.Text)}
	}
	return infos, nil
}

// EnvelopeLister lists the vault's envelopes; *vault.Vault satisfies it.
type EnvelopeLister interface {
	List(f vault.Filter) ([]vault.Note, []vault.BrokenError, error)
}

// Reviewer is a verifier.Model: it asks a language model whether a payload is fit
// to send, letting it read (never write) the journal and the vault for the same
// target. It is safe for concurrent use when its provider and readers are.
type Reviewer struct {
	provider model.Provider
	model    string
	ops      OperationReader
	envs     EnvelopeLister
}

var _ verifier.Model = (*Reviewer)(nil)

// NewReviewer returns a Reviewer asking model through p (usually a *Recovery). ops
// and envs may be nil: the tool that reads them is then not offered.
func NewReviewer(p model.Provider, model string, ops OperationReader, envs EnvelopeLister) *Reviewer {
	return &Reviewer{provider: p, model: model, ops: ops, envs: envs}
}

// reviewBounds are the recovery and the budget one review runs under: the
// task's model section (m, when known; else the defaults), its requests shared
// by every round of the review, its waits at most ReviewMaxWait.
func reviewBounds(m *policy.Model) (*model.Policy, *model.Budget) {
	section := policy.DefaultModel()
	if m != nil {
		section = *m
	}
	p := model.RetryPolicy(section).WithDefaults()
	p.MaxWait = min(p.MaxWait, ReviewMaxWait)
	return &p, model.NewBudget(p.MaxAttempts, p.MaxWait)
}

// Review asks the model about in. The model may call the read-only tools for at
// most MaxToolRounds rounds, then must answer. An answer that is not exactly the
// verdict object is a Stop with the reason NotUnderstood. The reason of a Repair or
// Stop joins the model's reasons with "; ". Review returns an error when the model
// request fails (after its recovery) or a tool cannot read.
func (r *Reviewer) Review(ctx context.Context, in verifier.Input) (verifier.Decision, string, error) {
	msgs := []model.Message{{Role: model.RoleUser, Text: reviewRequest(in)}}
	retry, budget := reviewBounds(in.Model)
	for round := 0; ; round++ {
		res, err := r.provider.Complete(ctx, model.Request{Model: r.model, System: reviewerPrompt,
			Messages: msgs, Tools: r.tools(), MaxTokens: ReviewMaxTokens, Retry: retry, Budget: budget})
		if err != nil {
			return "", "", fmt.Errorf("agent: review: %w", err)
		}
		if res.Stop != model.StopToolUse || len(res.ToolCalls) == 0 {
			d, reason := parseVerdict(res.Text)
			return d, reason, nil
		}
		if round == MaxToolRounds {
			return verifier.Stop, NotUnderstood, nil
		}
		results, err := r.runTools(ctx, in.Target, res.ToolCalls)
		if err != nil {
			return "", "", fmt.Errorf("agent: review: %w", err)
		}
		msgs = append(msgs, model.Message{Role: model.RoleAssistant, Text: res.Text, ToolCalls: res.ToolCalls}, results)
		if round+1 == MaxToolRounds {
			msgs[len(msgs)-1].Text = "No more tool calls: answer now with the JSON object."
		}
	}
}

func reviewRequest(in verifier.Input) string {
	var b strings.Builder
	fmt.Fprintf(&b, "Tool: %s\nAction: %s\nTarget: %s\n", in.Tool, in.Action, in.Target)
	if in.ParseMode != "" {
		fmt.Fprintf(&b, "Parse mode: %s\n", in.ParseMode)
	}
	fmt.Fprintf(&b, "Text:\n<<<\n%s\n>>>", in.Text)
	return b.String()
}

// verdict is the one answer the Reviewer accepts.
type verdict struct {
	Decision *string  `json:"decision"`
	Reasons  []string `json:"reasons"`
}

// parseVerdict reads the model's answer: one JSON object, bare or in a ```json
// fence, with a known decision and, for repair or stop, at least one reason.
func parseVerdict(text string) (verifier.Decision, string) {
	body := strings.TrimSpace(text)
	if rest, ok := strings.CutPrefix(body, "```json"); ok {
		inner, ok := strings.CutSuffix(rest, "```")
		if !ok {
			return verifier.Stop, NotUnderstood
		}
		body = strings.TrimSpace(inner)
	}
	var v verdict
	dec := json.NewDecoder(strings.NewReader(body))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&v); err != nil || v.Decision == nil {
		return verifier.Stop, NotUnderstood
	}
	if _, err := dec.Token(); !errors.Is(err, io.EOF) {
		return verifier.Stop, NotUnderstood
	}
	var reasons []string
	for _, r := range v.Reasons {
		if r = strings.TrimSpace(r); r != "" {
			reasons = append(reasons, r)
		}
	}
	switch d := verifier.Decision(*v.Decision); d {
	case verifier.Pass:
		return d, ""
	case verifier.Repair, verifier.Stop:
		if len(reasons) > 0 {
			return d, strings.Join(reasons, "; ")
		}
	}
	return verifier.Stop, NotUnderstood
}
