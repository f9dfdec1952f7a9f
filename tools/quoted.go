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

// StillQuoted reads again the message p acts on or takes (an edit, a delete, a
// pin, a copy or a forward of a message this bot sent) and reports what
// changed since p quoted it, in words: "" when it reads as the approver saw it,
// or p quotes no message (a person's message, which a bot cannot read). What an
// approver approved must still hold when it leaves: an edit made since, or a
// delete, changes what the commit would do.
func StillQuoted(ctx context.Context, p action.Payload, sent Sent) (string, error) {
	if !quotes[p.Action] || p.MessageID == 0 {
		return "", nil
	}
	chat := p.Target
	if p.From != "" {
		chat = p.From
	}
	m, err := sent.Message(ctx, chat, p.MessageID)
	switch {
	case errors.Is(err, ErrNotSentHere) && p.Before == "":
		return "", nil
	case errors.Is(err, ErrNotSentHere):
		return fmt.Sprintf("message %d in chat %s is no longer among the messages this bot sent", p.MessageID, chat), nil
	case err != nil:
		return "", fmt.Errorf("tools: read message %d in chat %s again: %w", p.MessageID, chat, err)
	case m.Deleted:
		return fmt.Sprintf("message %d in chat %s was deleted since it was approved (%s)", p.MessageID, chat, m.OperationID), nil
	case m.Text != p.Before:
		return fmt.Sprintf("message %d in chat %s changed since it was approved (%s): it read %q, it now reads %q",
			p.MessageID, chat, m.OperationID, cutRunes(p.Before, quotedShown), cutRunes(m.Text, quotedShown)), nil
	}
	return "", nil
}

// cutRunes is s cut to n characters, with an ellipsis when cut.
func cutRunes(s string, n int) string {
	if r := []rune(s); len(r) > n {
		return string(r[:n]) + "…"
	}
	return s
}
