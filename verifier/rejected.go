package verifier

import (
	"context"
	"strings"

	"github.com/countersign/countersign/policy"
)

// rejected stops a payload a person rejected before, in this task or from this
// chat, within the rejected window, when it is asked again unchanged: the same
// content (every field but the text, Input.Content) and the same text as its
// recipient reads it (Seen, without regard to case, as the duplicate check
// compares). A rejection is an answer; asking again is a loop unless the
// request says what changed (Input.Changed), which the check then lets through
// to a card that shows it. A history that cannot be read stops too.
func (c Checker) rejected(ctx context.Context, p *payload) []finding {
	since := c.clock().Add(-c.cfg.RejectedWindow)
	before, err := c.history.Rejected(ctx, p.in.Task, p.in.Chat, since)
	if err != nil {
		return []finding{stopf("history unavailable: %v", err)}
	}
	text := Seen(p.in.Text, p.in.ParseMode)
	var match *Sent
	for i, s := range before {
		if s.Content == p.in.Content && strings.EqualFold(Seen(s.Text, s.ParseMode), text) && (match == nil || s.At.After(match.At)) {
			match = &before[i]
		}
	}
	if match == nil {
		return nil
	}
	return []finding{stopf("a person rejected this same request as operation %s (%s); it is not asked again unless the request says what changed since (the %q argument)",
		match.OperationID, match.At.UTC().Format("2006-01-02 15:04 UTC"), policy.ChangedArg)}
}
