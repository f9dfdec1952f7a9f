package operator

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/countersign/countersign/action"
	"github.com/countersign/countersign/journal"
	"github.com/countersign/countersign/tools"
	"github.com/countersign/countersign/verifier"
)

// History is the read-only view of the journal that the verifier and the tools
// are given: what was sent, may have been sent, or waits for approval, by
// target (verifier.History), and the messages this bot sent (tools.Sent).
type History struct {
	Journal *journal.Journal
	// Clock dates what was sent (Now); nil: the real clock.
	Clock Clock
	// Transport, when set, limits the messages tools.Sent finds to those it
	// delivered: the console, on the bot's data folder, must not take a
	// Telegram message for one it can edit, nor journal an edit of it.
	Transport string
}

var _ verifier.History = History{}

// SeenKey is the key the journal keeps with each operation
// (journal.WithSeenKey): verifier.SeenKey of what p sends, as Recent reads it
// back. A process that creates operations opens its journal with it, so that
// the duplicate check reads only the operations of a payload's key.
func SeenKey(p action.Payload) string {
	files := make([]string, len(p.Files))
	for i, f := range p.Files {
		files[i] = f.SHA256
	}
	return verifier.SeenKey(p.Text, p.ParseMode, files)
}

// Recent implements verifier.History: the operations of the key, and those
// whose key the journal does not know (written before it kept keys, or by a
// process opened without SeenKey), which the check compares whole.
func (h History) Recent(ctx context.Context, target string, since time.Time, key string) ([]verifier.Sent, error) {
	ops, err := h.Journal.Operations(ctx, journal.Filter{Target: target, Since: since, SeenKey: key, States: []journal.State{
		journal.AwaitingApproval, journal.Approved, journal.Committing, journal.RetryWait, journal.Committed, journal.Unknown}})
	if err != nil {
		return nil, err
	}
	sent := make([]verifier.Sent, len(ops))
	for i, op := range ops {
		sent[i] = verifier.Sent{OperationID: op.ID, Text: op.Payload.Text, ParseMode: op.Payload.ParseMode, State: string(op.State), At: op.Created}
		for _, f := range op.Payload.Files {
			sent[i].Files = append(sent[i].Files, f.SHA256)
		}
	}
	return sent, nil
}

// Rejected implements verifier.History: the operations a person rejected since
// t (by the time of the rejection) of task, or of every task from chat when it
// is set, which includes task's.
func (h History) Rejected(ctx context.Context, task, chat string, since time.Time) ([]verifier.Sent, error) {
	f := journal.Filter{TaskID: task, States: []journal.State{journal.Rejected}, ChangedSince: since}
	if chat != "" {
		f.TaskID, f.Chat = "", chat
	}
	ops, err := h.Journal.Operations(ctx, f)
	if err != nil {
		return nil, err
	}
	out := make([]verifier.Sent, len(ops))
	for i, op := range ops {
		out[i] = verifier.Sent{OperationID: op.ID, Text: op.Payload.Text, ParseMode: op.Payload.ParseMode, State: string(op.State),
			At: op.Updated, Content: tools.Content(op.Payload)}
	}
	return out, nil
}

var _ tools.Sent = History{}

// sentStates are the states of an operation whose messages are in the world.
var sentStates = []journal.State{journal.Committed}

// Operation implements tools.Sent: the messages a committed operation sent, one
// per part (an edit's, the message it edited).
func (h History) Operation(ctx context.Context, id string) ([]tools.SentMessage, error) {
	op, err := h.Journal.Operation(ctx, id)
	if errors.Is(err, journal.ErrNotFound) || err == nil && (op.State != journal.Committed || evidenceOf(op) == nil || !h.delivered(op)) {
		return nil, fmt.Errorf("operation %s: %w", id, tools.ErrNotSentHere)
	}
	if err != nil {
		return nil, err
	}
	return sentBy(op), nil
}

// Message implements tools.Sent: the last committed operation that sent or
// edited message id in chat says what it reads.
func (h History) Message(ctx context.Context, chat string, id int64) (tools.SentMessage, error) {
	ops, err := h.Journal.Operations(ctx, journal.Filter{Target: chat, States: sentStates, Transport: h.Transport})
	if err != nil {
		return tools.SentMessage{}, err
	}
	var last tools.SentMessage
	var first time.Time
	for _, op := range ops {
		for _, m := range sentBy(op) {
			if m.MessageID != id {
				continue
			}
			if !m.Sent.IsZero() && (first.IsZero() || m.Sent.Before(first)) {
				first = m.Sent
			}
			// The last change wins; of two at one instant, the operation made
			// later (ops come newest first).
			if last.OperationID == "" || m.At.After(last.At) {
				last = m
			}
		}
	}
	last.Sent = first
	if last.OperationID == "" || first.IsZero() {
		return last, fmt.Errorf("message %d in chat %s: %w", id, chat, tools.ErrNotSentHere)
	}
	return last, nil
}

// sentBy is what a committed operation put in the world: its parts' messages,
// or the message its edit changed.
func sentBy(op journal.Operation) []tools.SentMessage {
	ev := evidenceOf(op)
	if ev == nil {
		return nil
	}
	m := tools.SentMessage{OperationID: op.ID, Chat: op.Payload.Target, ParseMode: op.Payload.ParseMode, At: op.Updated}
	if p := op.Payload; p.MessageID != 0 && p.From == "" { // an operation on a message sent before
		if !p.Removes && p.Text == "" {
			return nil // a pin: the message reads as it did
		}
		m.MessageID, m.Text, m.Deleted = p.MessageID, p.Text, p.Removes
		if p.Caption {
			m.Kind = action.FileDocument // a caption's edit: the message holds a file
		}
		return []tools.SentMessage{m}
	}
	m.Sent = op.Updated
	texts, kinds := op.Payload.Messages(), []string(nil)
	switch p := op.Payload; {
	case p.From != "": // a forward or a copy: what it reads is the source's
		texts, kinds = []string{p.Before}, []string{tools.KindRepost}
	case p.Poll != nil:
		kinds = []string{tools.KindPoll}
	case len(p.Files) == 1:
		kinds = []string{p.Files[0].Kind}
	case len(p.Files) > 1: // an album: a message per item, with its caption
		texts = nil
		for _, f := range p.Files {
			texts, kinds = append(texts, f.Caption), append(kinds, f.Kind)
		}
	}
	var out []tools.SentMessage
	for k, id := range ev.MessageIDs {
		if k < len(texts) {
			m.MessageID, m.Text = id, texts[k]
			if k < len(kinds) {
				m.Kind = kinds[k]
			}
			out = append(out, m)
		}
	}
	return out
}

// delivered reports whether op went through this view's transport.
func (h History) delivered(op journal.Operation) bool {
	return h.Transport == "" || op.Transport == h.Transport
}

// evidenceOf is what the service confirmed of a committed operation: its
// result's evidence, else what its parts recorded on the way.
func evidenceOf(op journal.Operation) *action.Evidence {
	if op.Result != nil && op.Result.Evidence != nil {
		return op.Result.Evidence
	}
	return op.Evidence
}

// Now implements tools.Sent.
func (h History) Now() time.Time {
	if h.Clock == nil {
		return time.Now()
	}
	return h.Clock.Now()
}
