-- The audit trail (SQLite's 0010_audit.sql): one record per transition, approval
-- asked and decision, appended in the transaction of the fact, each carrying the
-- hash of the one before. The genesis record is written with this migration.
CREATE TABLE audit (
	seq          BIGINT PRIMARY KEY,
	at           BIGINT NOT NULL,
	kind         TEXT NOT NULL,
	operation_id TEXT NOT NULL DEFAULT '',
	ref          TEXT NOT NULL DEFAULT '',
	body         TEXT NOT NULL,
	prev_hash    TEXT NOT NULL,
	hash         TEXT NOT NULL
);
CREATE FUNCTION audit_append_only() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
	RAISE EXCEPTION 'the audit trail is append-only';
END $$;
CREATE TRIGGER audit_append_only BEFORE UPDATE OR DELETE ON audit
	FOR EACH ROW EXECUTE FUNCTION audit_append_only();
