-- The session an agent CLI keeps for each chat (Claude Code's session id, Codex's
-- thread id), so that the chat's next message resumes it; /new deletes the row.
CREATE TABLE agent_sessions (
	chat       TEXT NOT NULL,
	provider   TEXT NOT NULL,
	session_id TEXT NOT NULL,
	updated_at INTEGER NOT NULL,
	PRIMARY KEY (chat, provider)
);
