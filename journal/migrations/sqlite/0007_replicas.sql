-- Replicas: several processes that send one transport's operations from one
-- journal (on PostgreSQL). An operation or an update is claimed by the replica
-- that moved or received it last, until its lease runs out: a replica renews the
-- leases of what it holds while it lives, and another one takes over what a dead
-- replica held once the lease is past (a commit left committing becomes unknown,
-- never a resend). A process that is no replica claims nothing ('' and 0).
ALTER TABLE operations ADD COLUMN claimed_by TEXT NOT NULL DEFAULT '';
ALTER TABLE operations ADD COLUMN lease_until INTEGER NOT NULL DEFAULT 0;
ALTER TABLE inbox ADD COLUMN claimed_by TEXT NOT NULL DEFAULT '';
ALTER TABLE inbox ADD COLUMN lease_until INTEGER NOT NULL DEFAULT 0;
CREATE INDEX operations_claimed ON operations(claimed_by, state);
CREATE INDEX inbox_claimed ON inbox(claimed_by, handled_at);

-- The edits of cards that replicas asked for, made by the leader in order (one
-- writer of cards at a time); a row is deleted once its edit is made.
CREATE TABLE card_edits (
	seq        INTEGER PRIMARY KEY AUTOINCREMENT,
	ref        TEXT NOT NULL,
	line       TEXT NOT NULL,
	created_at INTEGER NOT NULL
);
