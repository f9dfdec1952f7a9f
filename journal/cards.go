package journal

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"strings"
	"time"
)

// Card is a message shown to a person to decide on something (an approval, an
// unknown outcome), kept so that every copy can be edited after the decision.
type Card struct {
	Ref       string // the approval id or operation id it is about
	ChatID    int64
	MessageID int
	Text      string
}

// AddCard records a card that was sent.
func (j *Journal) AddCard(ctx context.Context, c Card) error {
	_, err := j.exec(ctx, durable, `INSERT INTO cards(ref, chat_id, message_id, text, created_at) VALUES(?, ?, ?, ?, ?) ON CONFLICT DO NOTHING`,
		c.Ref, c.ChatID, c.MessageID, c.Text, ms(j.now()))
	if err != nil {
		return fmt.Errorf("journal: add card for %s: %w", c.Ref, err)
	}
	return nil
}

// Cards returns every card sent about ref.
func (j *Journal) Cards(ctx context.Context, ref string) ([]Card, error) {
	rows, err := j.db.QueryContext(ctx, `SELECT ref, chat_id, message_id, text FROM cards WHERE ref = ? ORDER BY created_at`, ref)
	if err != nil {
		return nil, fmt.Errorf("journal: cards of %s: %w", ref, err)
	}
	defer rows.Close()
	var cs []Card
	for rows.Next() {
		var c Card
		if err := rows.Scan(&c.Ref, &c.ChatID, &c.MessageID, &c.Text); err != nil {
			return nil, fmt.Errorf("journal: cards of %s: %w", ref, err)
		}
		cs = append(cs, c)
	}
	return cs, rows.Err()
}

// CardAt returns the card recorded as message id in chat: what a reply to that
// message answers. ErrNotFound when none was recorded there: a reply is read
// by the message it answers, never by that message's text, which may be a
// requester's.
func (j *Journal) CardAt(ctx context.Context, chat int64, id int) (Card, error) {
	var c Card
	err := j.db.QueryRowContext(ctx, `SELECT ref, chat_id, message_id, text FROM cards WHERE chat_id = ? AND message_id = ?`, chat, id).
		Scan(&c.Ref, &c.ChatID, &c.MessageID, &c.Text)
	switch {
	case errors.Is(err, sql.ErrNoRows):
		return c, fmt.Errorf("journal: no card at message %d in chat %d: %w", id, chat, ErrNotFound)
	case err != nil:
		return c, fmt.Errorf("journal: card at message %d in chat %d: %w", id, chat, err)
	}
	return c, nil
}

// Uncarded returns the pending, unexpired approvals of operations delivered by
// transport that no card was ever recorded for: the process that asked for them
// stopped before it showed them, or another process (the console, a later
// surface) asked for them. The owner of the transport shows them. Only approvals
// created before createdBefore are returned: a younger one is still on its way to
// its card in the request that asked for it.
func (j *Journal) Uncarded(ctx context.Context, transport string, createdBefore time.Time) ([]Approval, error) {
	return j.uncarded(ctx, "a.decision = '' AND a.created_at < ?", ms(createdBefore), transport)
}

// UncardedSince is Uncarded for the approvals created at or after since: the
// few of the last moments, which an owner can look for every second however many
// older ones wait with their cards out. It reads the index of pending approvals
// by creation time (migration 0005).
func (j *Journal) UncardedSince(ctx context.Context, transport string, since time.Time) ([]Approval, error) {
	return j.uncarded(ctx, "a.decision = '' AND a.created_at >= ?", ms(since), transport)
}

func (j *Journal) uncarded(ctx context.Context, created string, at int64, transport string) ([]Approval, error) {
	return j.approvals(ctx, "approvals without cards", `SELECT `+prefixed("a.", approvalColumns)+` FROM approvals a
		JOIN operations o ON o.id = a.operation_id
		WHERE `+created+` AND a.expires_at > ? AND o.transport = ? AND o.state = ?
		AND NOT EXISTS (SELECT 1 FROM cards c WHERE c.ref = a.id)
		ORDER BY a.created_at`, at, ms(j.now()), transport, AwaitingApproval)
}

// ShownLast returns the pending, unexpired approvals of operations delivered by
// transport that an operator published (Shown) within the last while before the
// latest such publication, with their cards or not: those a stopped run was
// showing in its last moments may have reached some approvers only, however long
// ago it stopped, and its next run shows the rest.
func (j *Journal) ShownLast(ctx context.Context, transport string, while time.Duration) ([]Approval, error) {
	return j.approvals(ctx, "approvals shown last", `SELECT `+prefixed("a.", approvalColumns)+` FROM approvals a
		JOIN operations o ON o.id = a.operation_id
		WHERE a.decision = '' AND a.shown_at != 0 AND a.expires_at > ? AND o.transport = ? AND o.state = ?
		AND a.shown_at >= (SELECT MAX(l.shown_at) FROM approvals l JOIN operations lo ON lo.id = l.operation_id
			WHERE l.decision = '' AND lo.transport = ?) - ?
		ORDER BY a.created_at`, ms(j.now()), transport, AwaitingApproval, transport, while.Milliseconds())
}

// ShowApproval marks approval was published for the surfaces to show, now, by
// the run by names (Approval.ShownBy), and reports whether the mark is this
// call's: it takes only when the approval is still as was (its Shown and
// ShownBy, as read), so that of two replicas' watches that found it, one shows
// it. Like Handled it waits for no fsync of its own: losing the mark to a power
// cut shows the card once more, and a card is recorded per chat.
func (j *Journal) ShowApproval(ctx context.Context, was Approval, by string) (bool, error) {
	res, err := j.exec(ctx, lazy, `UPDATE approvals SET shown_at = ?, shown_by = ? WHERE id = ? AND shown_at = ? AND shown_by = ?`,
		ms(j.now()), by, was.ID, ms(was.Shown), was.ShownBy)
	if err != nil {
		return false, fmt.Errorf("journal: approval %s shown: %w", was.ID, err)
	}
	n, err := res.RowsAffected()
	if err != nil {
		return false, fmt.Errorf("journal: approval %s shown: %w", was.ID, err)
	}
	return n == 1, nil
}

// KeepShown renews, as of now, the mark of approval id that by set
// (ShowApproval), if by still holds it: by's surface is still showing it, its
// cards held up (behind the chat's pace, a slow send), so that another
// replica's watch, which shows what a live replica has not marked within a
// lease, leaves it alone.
func (j *Journal) KeepShown(ctx context.Context, id, by string) error {
	if _, err := j.exec(ctx, lazy, `UPDATE approvals SET shown_at = ? WHERE id = ? AND shown_by = ?`, ms(j.now()), id, by); err != nil {
		return fmt.Errorf("journal: approval %s still shown: %w", id, err)
	}
	return nil
}

// approvals runs a query of approval rows; what names it in an error.
func (j *Journal) approvals(ctx context.Context, what, query string, args ...any) ([]Approval, error) {
	rows, err := j.db.QueryContext(ctx, query, args...)
	if err != nil {
		return nil, fmt.Errorf("journal: %s: %w", what, err)
	}
	defer rows.Close()
	var as []Approval
	for rows.Next() {
		a, err := scanApproval(rows)
		if err != nil {
			return nil, fmt.Errorf("journal: %s: %w", what, err)
		}
		as = append(as, a)
	}
	return as, rows.Err()
}

// prefixed qualifies each column of a comma-separated list with p.
func prefixed(p, cols string) string {
	f := strings.Split(cols, ", ")
	for i := range f {
		f[i] = p + f[i]
	}
	return strings.Join(f, ", ")
}

// CardEdit is a change of every card about Ref that a replica asked for: Line is
// appended to each and its buttons removed. Among replicas the leader makes the
// edits, in the order they were asked, so that cards have one writer and a
// card's last edit is the last one asked.
type CardEdit struct {
	Seq  int64
	Ref  string
	Line string
}

// AskCardEdit records that the cards about ref should say line. It waits for no
// fsync: an edit lost to a power cut leaves a card with its buttons, whose tap is
// answered from the journal.
func (j *Journal) AskCardEdit(ctx context.Context, ref, line string) error {
	_, err := j.exec(ctx, lazy, `INSERT INTO card_edits(ref, line, created_at) VALUES(?, ?, ?)`, ref, line, ms(j.now()))
	if err != nil {
		return fmt.Errorf("journal: ask a card edit for %s: %w", ref, err)
	}
	return nil
}

// CardEdits returns up to limit card edits not made yet, in the order asked.
func (j *Journal) CardEdits(ctx context.Context, limit int) ([]CardEdit, error) {
	rows, err := j.db.QueryContext(ctx, `SELECT seq, ref, line FROM card_edits ORDER BY seq LIMIT ?`, limit)
	if err != nil {
		return nil, fmt.Errorf("journal: card edits: %w", err)
	}
	defer rows.Close()
	var es []CardEdit
	for rows.Next() {
		var e CardEdit
		if err := rows.Scan(&e.Seq, &e.Ref, &e.Line); err != nil {
			return nil, fmt.Errorf("journal: card edits: %w", err)
		}
		es = append(es, e)
	}
	return es, rows.Err()
}

// CardEditMade forgets the card edit seq, made.
func (j *Journal) CardEditMade(ctx context.Context, seq int64) error {
	if _, err := j.exec(ctx, lazy, `DELETE FROM card_edits WHERE seq = ?`, seq); err != nil {
		return fmt.Errorf("journal: card edit %d made: %w", seq, err)
	}
	return nil
}

// Expiring returns the undecided approvals of transport's operations still
// awaiting approval that expire after now and at or before before, soonest
// first: the ones a reminder may still save.
func (j *Journal) Expiring(ctx context.Context, transport string, before time.Time) ([]Approval, error) {
	return j.approvals(ctx, "approvals near their expiry", `SELECT `+prefixed("a.", approvalColumns)+` FROM approvals a
		JOIN operations o ON o.id = a.operation_id
		WHERE a.decision = '' AND a.expires_at > ? AND a.expires_at <= ? AND o.transport = ? AND o.state = ?
		ORDER BY a.expires_at`, ms(j.now()), ms(before), transport, AwaitingApproval)
}
