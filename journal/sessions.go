package journal

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
)

// Session returns the session chat keeps with the agent CLI provider, "" when
// it keeps none.
func (j *Journal) Session(ctx context.Context, provider, chat string) (string, error) {
	var id string
	err := j.db.QueryRowContext(ctx, `SELECT session_id FROM agent_sessions WHERE chat = ? AND provider = ?`, chat, provider).Scan(&id)
	if errors.Is(err, sql.ErrNoRows) {
		return "", nil
	}
	if err != nil {
		return "", fmt.Errorf("journal: session of %s: %w", chat, err)
	}
	return id, nil
}

// SetSession records session as chat's with provider; "" forgets it, so the
// chat's next message starts a new one.
func (j *Journal) SetSession(ctx context.Context, provider, chat, session string) error {
	query, args := `DELETE FROM agent_sessions WHERE chat = ? AND provider = ?`, []any{chat, provider}
	if session != "" {
		query = `INSERT INTO agent_sessions(chat, provider, session_id, updated_at) VALUES (?, ?, ?, ?)
			ON CONFLICT(chat, provider) DO UPDATE SET session_id = excluded.session_id, updated_at = excluded.updated_at`
		args = []any{chat, provider, session, ms(j.now())}
	}
	if _, err := j.exec(ctx, durable, query, args...); err != nil {
		return fmt.Errorf("journal: session of %s: %w", chat, err)
	}
	return nil
}
