package verifier_test

import (
	"context"
	"errors"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/countersign/countersign/policy"
	"github.com/countersign/countersign/verifier"
)

// noon is the frozen clock of these tests.
var noon = time.Date(2026, 3, 2, 12, 0, 0, 0, time.UTC)

func clock() time.Time { return noon }

// ok is a payload every check passes.
func ok() verifier.Input {
	return verifier.Input{Tool: "commit_send_message", Action: "send_message", Target: "@news_desk", Text: "Hello, readers."}
}

// verdictCase is one row of the checks' table tests: an input and the exact verdict.
type verdictCase struct {
	name    string
	in      verifier.Input
	want    verifier.Decision
	reasons []string
}

func runCases(t *testing.T, c *verifier.Checker, cases []verdictCase) {
	t.Helper()
	for _, tt := range cases {
		t.Run(tt.name, func(t *testing.T) {
			got := c.Check(context.Background(), tt.in)
			if got.Decision != tt.want || !slices.Equal(got.Reasons, tt.reasons) {
				t.Errorf("Check = %s %q, want %s %q", got.Decision, got.Reasons, tt.want, tt.reasons)
			}
		})
	}
}

// with returns ok() changed by f.
func with(f func(*verifier.Input)) verifier.Input {
	in := ok()
	f(&in)
	return in
}

func text(s string) verifier.Input { return with(func(in *verifier.Input) { in.Text = s }) }

func TestZeroCheckerRunsSchemaAndLinks(t *testing.T) {
	var c verifier.Checker
	got := c.Check(context.Background(), ok())
	if got.Decision != verifier.Pass || got.Checks != 2 || len(got.Reasons) != 0 {
		t.Errorf("zero Checker = %+v, want pass after 2 checks", got)
	}
	got = c.Check(context.Background(), text("TODO"))
	if want := []string{`links: placeholder text "TODO"`}; got.Decision != verifier.Repair || !slices.Equal(got.Reasons, want) {
		t.Errorf("zero Checker on a placeholder = %+v, want repair %q", got, want)
	}
}

// A stop is a stop whatever the other checks found, before it or after it.
func TestCheckStopOutranksRepair(t *testing.T) {
	c := verifier.New(policy.Verify{}, nil, clock)
	long := strings.Repeat("a", 40961)
	for _, tt := range []struct {
		name string
		in   verifier.Input
		want []string
	}{
		{"repair first", with(func(in *verifier.Input) { in.Target = "news"; in.Text = long }), []string{
			`schema: target "news" is not a chat id or @username`,
			"schema: text is 40961 characters long, more than 10 messages hold (40960)",
		}},
		{"repair after", text("TODO " + long), []string{
			"schema: text is 40966 characters long, more than 10 messages hold (40960)",
			`links: placeholder text "TODO"`,
		}},
	} {
		got := c.Check(context.Background(), tt.in)
		if got.Decision != verifier.Stop || !slices.Equal(got.Reasons, tt.want) {
			t.Errorf("%s: Check = %s %q, want stop %q", tt.name, got.Decision, got.Reasons, tt.want)
		}
		if got, want := got.Summary(), "stop: "+strings.Join(tt.want, "; "); got != want {
			t.Errorf("%s: Summary = %q, want %q", tt.name, got, want)
		}
	}
}

func TestCheckCountsTheChecksThatRan(t *testing.T) {
	rule, err := policy.ParsePattern("hello")
	if err != nil {
		t.Fatal(err)
	}
	cfg := policy.Verify{DuplicateWindow: time.Hour, Rules: []policy.Rule{{Require: []policy.Pattern{rule}}}}
	tests := []struct {
		name string
		c    *verifier.Checker
		in   verifier.Input
		want int
	}{
		{"no history, no rule", verifier.New(policy.Verify{}, nil, clock), ok(), 2},
		{"history, window off", verifier.New(policy.Verify{}, history{}, clock), ok(), 2},
		{"history and a rule", verifier.New(cfg, history{}, clock), ok(), 4},
		{"rule for commits only", verifier.New(cfg, history{}, clock), with(func(in *verifier.Input) { in.Tool = "prepare_reply" }), 3},
	}
	for _, tt := range tests {
		got := tt.c.Check(context.Background(), tt.in)
		if got.Checks != tt.want || got.Decision != verifier.Pass {
			t.Errorf("%s: Check = %+v, want pass after %d checks", tt.name, got, tt.want)
		}
		if want := "pass (" + string(rune('0'+tt.want)) + " checks)"; got.Summary() != want {
			t.Errorf("%s: Summary = %q, want %q", tt.name, got.Summary(), want)
		}
	}
}

// model is a canned Model that records whether it was asked.
type model struct {
	decision verifier.Decision
	reason   string
	err      error
	asked    *bool
}

func (m model) Review(ctx context.Context, in verifier.Input) (verifier.Decision, string, error) {
	*m.asked = true
	return m.decision, m.reason, m.err
}

func TestModelHook(t *testing.T) {
	cfg := policy.Verify{ModelCheck: []string{"commit_send_message"}}
	tests := []struct {
		name    string
		m       model
		in      verifier.Input
		want    verifier.Decision
		reasons []string
		asked   bool
	}{
		{"pass", model{decision: verifier.Pass}, ok(), verifier.Pass, nil, true},
		{"repair", model{decision: verifier.Repair, reason: "tone"}, ok(), verifier.Repair, []string{"model: tone"}, true},
		{"no answer", model{err: errors.New("overloaded")}, ok(), verifier.Stop, []string{"model: no answer: overloaded"}, true},
		{"odd answer", model{decision: "maybe"}, ok(), verifier.Stop, []string{`model: unknown decision "maybe"`}, true},
		{"tool not listed", model{decision: verifier.Stop}, with(func(in *verifier.Input) { in.Tool = "commit_publish_post" }), verifier.Pass, nil, false},
		{"not asked after a failure", model{decision: verifier.Stop}, text("TBD"), verifier.Repair, []string{`links: placeholder text "TBD"`}, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			asked := false
			tt.m.asked = &asked
			got := verifier.New(cfg, nil, clock).WithModel(tt.m).Check(context.Background(), tt.in)
			if got.Decision != tt.want || !slices.Equal(got.Reasons, tt.reasons) || asked != tt.asked {
				t.Errorf("Check = %s %q (asked %v), want %s %q (asked %v)", got.Decision, got.Reasons, asked, tt.want, tt.reasons, tt.asked)
			}
		})
	}
}
