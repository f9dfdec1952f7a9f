-- Chat turns (SQLite's 0013_chat_turns.sql): one agent-CLI run at a time per
-- chat, across replicas. seq is the row's own order (SQLite's rowid).
CREATE TABLE chat_turns (
	task_id     TEXT PRIMARY KEY,
	seq         BIGINT GENERATED ALWAYS AS IDENTITY,
	transport   TEXT NOT NULL,
	chat        TEXT NOT NULL,
	ord         BIGINT NOT NULL,
	replica     TEXT NOT NULL,
	lease_until BIGINT NOT NULL,
	queued_at   BIGINT NOT NULL,
	started_at  BIGINT NOT NULL DEFAULT 0
);
CREATE INDEX chat_turns_chat ON chat_turns(transport, chat);
CREATE INDEX chat_turns_replica ON chat_turns(replica);
