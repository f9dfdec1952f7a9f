-- Chat turns: one agent-CLI run at a time per chat, across replicas. Each
-- message that is to run a CLI in a chat queues a row here; the row whose
-- message the inbox stored first (ord, then the row's own order) runs, held by
-- its replica for a lease (renewed with the replica's other claims), and the
-- row is deleted when its run ends. A row whose lease ran out belongs to a
-- replica that died: it loses its place, or its turn.
--
-- ord is the inbox's order (rowid) of the message's update, or, for a message
-- the inbox never stored, one past the last update stored when it queued.
-- queued_at and started_at are by the lease clock; started_at is 0 while the
-- row waits.
CREATE TABLE chat_turns (
	task_id     TEXT PRIMARY KEY,
	transport   TEXT NOT NULL,
	chat        TEXT NOT NULL,
	ord         INTEGER NOT NULL,
	replica     TEXT NOT NULL,
	lease_until INTEGER NOT NULL,
	queued_at   INTEGER NOT NULL,
	started_at  INTEGER NOT NULL DEFAULT 0
);
CREATE INDEX chat_turns_chat ON chat_turns(transport, chat);
CREATE INDEX chat_turns_replica ON chat_turns(replica);
