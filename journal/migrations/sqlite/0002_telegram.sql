-- Where a task came from (e.g. a Telegram update), so that a redelivered update
-- never starts the same task twice.
ALTER TABLE tasks ADD COLUMN origin TEXT NOT NULL DEFAULT '';
CREATE UNIQUE INDEX tasks_origin ON tasks(origin) WHERE origin != '';

-- Messages that show something to decide on (approval cards, unknown-outcome
-- notices), so that every copy can be edited once it is decided, even after a restart.
CREATE TABLE cards (
	ref        TEXT NOT NULL,
	chat_id    INTEGER NOT NULL,
	message_id INTEGER NOT NULL,
	text       TEXT NOT NULL,
	created_at INTEGER NOT NULL,
	PRIMARY KEY (ref, chat_id, message_id)
);

-- Inbox: every update received, stored before it is confirmed to Telegram, so that
-- a crash never loses one; handled_at is set once its handling finished.
CREATE TABLE inbox (
	update_id   INTEGER PRIMARY KEY,
	body        TEXT NOT NULL,
	received_at INTEGER NOT NULL,
	handled_at  INTEGER NOT NULL DEFAULT 0
);
