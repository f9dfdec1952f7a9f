-- The audit trail: one record per fact a person may have to account for (every
-- transition, every approval asked, every decision), appended in the transaction
-- of the fact. Each record carries the hash of the one before (audit.go), so a
-- change, a deletion or a reorder breaks the chain from that record on. The
-- first record (the genesis, written with this migration) commits to a digest
-- of the history the journal had before it.
CREATE TABLE audit (
	seq          INTEGER PRIMARY KEY,
	at           INTEGER NOT NULL,
	kind         TEXT NOT NULL,
	operation_id TEXT NOT NULL DEFAULT '',
	ref          TEXT NOT NULL DEFAULT '',
	body         TEXT NOT NULL,
	prev_hash    TEXT NOT NULL,
	hash         TEXT NOT NULL
);
-- Append-only for the journal's own code and for a careless hand: the chain is
-- what tells a deliberate edit.
CREATE TRIGGER audit_no_update BEFORE UPDATE ON audit
BEGIN SELECT RAISE(ABORT, 'the audit trail is append-only'); END;
CREATE TRIGGER audit_no_delete BEFORE DELETE ON audit
BEGIN SELECT RAISE(ABORT, 'the audit trail is append-only'); END;
