package tools

import (
	"fmt"

	"github.com/countersign/countersign/action"
	"github.com/countersign/countersign/policy"
	"github.com/countersign/countersign/verifier"
)

// A commit tool owns what is said of its payloads: how one is put to an
// approver (Presenter) and which of the verifier's checks apply to it
// (Checked). The surfaces and the operator ask the tool, so that adding a tool
// touches neither the cards nor the operator.

// Shown is what an approver is shown of a payload beyond what every card has
// (action, audience, operation, payload hash, verdict, expiry) and beyond its
// text, which the surfaces show under TextLabel as it will be sent.
type Shown struct {
	// Facts are what will happen that the text does not say, one fact a line:
	// which message an edit changes and what it reads now, a document's name,
	// size and hash, a poll's options, an HTTP call's method and address. The
	// surfaces write their invisible characters as escapes.
	Facts []string
	// TextLabel names the payload's text on the card ("Text", "Caption",
	// "New text"); "" when the payload sends none (a delete).
	TextLabel string
	// Files are the files that will be sent; the surfaces show each photo
	// itself with the card.
	Files []action.File
	// Omitted says what the card leaves out of the payload, when it cannot
	// show it whole ("" when it shows everything).
	Omitted string
	// Audience is the chat whose members will see the action, for the card
	// to name by its title and type; "" when the action reaches no chat (an
	// HTTP call).
	Audience string
}

// Presenter is a commit tool that says how its payloads are shown. A tool that
// is not one is shown by its text.
type Presenter interface {
	Show(p action.Payload) Shown
}

// ShowOf is how t shows p: what t says, else p's text. With no tool (one the
// policy in force no longer offers) p's text is shown, and its facts read off
// the payload's fields so that nothing it does goes unsaid.
func ShowOf(t Tool, p action.Payload) Shown {
	s := shownOf(t, p)
	if p.Changed != "" {
		s.Facts = append(s.Facts, "Asked again after a rejection. What changed, as the request says: "+p.Changed)
	}
	if p.Requoted != "" {
		s.Facts = append(s.Facts, "Asked again: approved before, but "+p.Requoted+". This card quotes it as it reads now.")
	}
	return s
}

func shownOf(t Tool, p action.Payload) Shown {
	if pr, ok := t.(Presenter); ok && t != nil {
		s := pr.Show(p)
		if s.Audience == "" && p.Request == nil {
			s.Audience = p.Target
		}
		return s
	}
	s := Shown{TextLabel: "Text", Files: p.Files, Audience: p.Target}
	if p.Text == "" {
		s.TextLabel = ""
	}
	if p.MessageID != 0 {
		s.Facts = append(s.Facts, change(p, fmt.Sprintf("Acts (%s) on", p.Action)))
	}
	for _, f := range p.Files {
		s.Facts = append(s.Facts, f.Describe())
	}
	return s
}

// BeforeShown is how much of a message's current text a card quotes.
const BeforeShown = 1000

// change is the fact of a payload that acts on a message already in the world:
// verb, which message, and what it reads now, cut at BeforeShown characters
// with the cut said.
func change(p action.Payload, verb string) string {
	before, more := p.Before, 0
	if r := []rune(before); len(r) > BeforeShown {
		before, more = string(r[:BeforeShown]), len(r)-BeforeShown
	}
	s := fmt.Sprintf("%s message %d in %s. It reads now:\n%s", verb, p.MessageID, p.Target, before)
	if more > 0 {
		s += fmt.Sprintf("… (%d more characters not shown)", more)
	}
	return s
}

// Checked is a commit tool that says what of its payloads the verifier
// checks. A tool that is not one is checked as a message: its text, target and
// parse mode, with the duplicate check unless it sets a state.
type Checked interface {
	Check(p action.Payload) verifier.Input
}

// CheckOf is what the verifier is given of p, a payload of t (nil: a tool the
// policy in force no longer offers). The caller fills in the tool's name and
// the policy.
func CheckOf(t Tool, p action.Payload) verifier.Input {
	if c, ok := t.(Checked); ok && t != nil {
		return c.Check(p)
	}
	return verifier.Input{Action: p.Action, Target: p.Target, Text: p.Text, ParseMode: p.ParseMode,
		SetsState: t != nil && ClassOf(t) == policy.StateSetting, NoText: p.Text == ""}
}
