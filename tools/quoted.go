package tools

import (
	"context"
	"errors"
	"fmt"

	"github.com/countersign/countersign/action"
)

// quotes are the actions whose payload names a message already in the world
// and quotes what it read when the payload was made (Payload.Before).
var quotes = map[string]bool{action.EditMessage: true, action.DeleteMessage: true, action.PinMessage: true,
	action.UnpinMessage: true, action.CopyMessage: true, action.ForwardMessage: true}

// quotedShown is how much of a text a change is told with.
const quotedShown = 200

// A Change is what became of the message a payload quotes since the payload
// was made (StillQuoted).
type Change struct {
	// Words says what changed, for a person; "" when nothing did.
	Words string
	// Now is the message's text as it reads now, when it is still there.
	Now string
	// Gone: the message was deleted, or is no longer among this bot's
	// messages; there is nothing left to act on.
	Gone bool
	// Edited: the message reads otherwise now (Now).
	Edited bool
	// Audience is the chat the payload reaches as it is now, when it was
	// renamed or is of another kind since (StillAudience).
	Audience *action.Audience
}

// And is what changed in c and in d together: one card says both.
func (c Change) And(d Change) Change {
	switch {
	case c.Words == "":
		return d
	case d.Words == "":
		return c
	}
	c.Words += "; " + d.Words
	c.Gone, c.Edited = c.Gone || d.Gone, c.Edited || d.Edited
	if d.Edited {
		c.Now = d.Now
	}
	if d.Audience != nil {
		c.Audience = d.Audience
	}
	return c
}

// StillQuoted reads again the message p acts on or takes (an edit, a delete, a
// pin, a copy or a forward of a message this bot sent) and reports what
// changed since p quoted it: no Words when it reads as the approver saw it, or
// p quotes no message (a person's message, which a bot cannot read). What an
// approver approved must still hold when it leaves: an edit made since, or a
// delete, changes what the commit would do.
func StillQuoted(ctx context.Context, p action.Payload, sent Sent) (Change, error) {
	if !quotes[p.Action] || p.MessageID == 0 {
		return Change{}, nil
	}
	chat := p.Target
	if p.From != "" {
		chat = p.From
	}
	m, err := sent.Message(ctx, chat, p.MessageID)
	switch {
	case errors.Is(err, ErrNotSentHere) && p.Before == "":
		return Change{}, nil
	case errors.Is(err, ErrNotSentHere):
		return Change{Words: fmt.Sprintf("message %d in chat %s is no longer among the messages this bot sent", p.MessageID, chat), Gone: true}, nil
	case err != nil:
		return Change{}, fmt.Errorf("tools: read message %d in chat %s again: %w", p.MessageID, chat, err)
	case m.Deleted:
		return Change{Words: fmt.Sprintf("message %d in chat %s was deleted since it was approved (%s)", p.MessageID, chat, m.OperationID), Gone: true}, nil
	case m.Text != p.Before:
		return Change{Words: fmt.Sprintf("message %d in chat %s changed since it was approved (%s): it read %q, it now reads %q",
			p.MessageID, chat, m.OperationID, excerpt(p.Before, quotedShown), excerpt(m.Text, quotedShown)), Now: m.Text, Edited: true}, nil
	}
	return Change{}, nil
}

// Requote is p quoting what it quotes as it reads now (the message, c.Now; the
// chat it reaches, c.Audience), with what changed since the approval it had
// (c.Words) for its next card: the payload a new approval is asked for, its
// hash covering all of it.
func Requote(p action.Payload, c Change) action.Payload {
	if c.Edited {
		p.Before = c.Now
	}
	if c.Audience != nil {
		p.Audience = c.Audience
	}
	p.Requoted = c.Words
	return p
}
