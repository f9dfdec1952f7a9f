package journal

import (
	"context"
	"fmt"
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
	_, err := j.db.ExecContext(ctx, `INSERT OR IGNORE INTO cards(ref, chat_id, message_id, text, created_at) VALUES(?, ?, ?, ?, ?)`,
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
