-- Audit records waiting for their place in the trail (PostgreSQL only; see
-- journal/auditpending.go). A write inserts its facts' records here, in the
-- facts' own transaction, and takes no turn on the trail; a flush chains them
-- into audit, in id order, under the audit lock, and deletes them here in the
-- same transaction. A row is never updated: only a flush removes it.
CREATE TABLE audit_pending (
	id           BIGINT GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
	at           BIGINT NOT NULL,
	kind         TEXT NOT NULL,
	operation_id TEXT NOT NULL DEFAULT '',
	ref          TEXT NOT NULL DEFAULT '',
	body         TEXT NOT NULL
);
CREATE TRIGGER audit_pending_no_update BEFORE UPDATE ON audit_pending
	FOR EACH ROW EXECUTE FUNCTION audit_append_only();
