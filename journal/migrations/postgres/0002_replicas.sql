-- Replicas (SQLite's 0007_replicas.sql): the replica that claimed an operation
-- or an update last, and until when its lease holds.
ALTER TABLE operations ADD COLUMN claimed_by TEXT NOT NULL DEFAULT '';
ALTER TABLE operations ADD COLUMN lease_until BIGINT NOT NULL DEFAULT 0;
ALTER TABLE inbox ADD COLUMN claimed_by TEXT NOT NULL DEFAULT '';
ALTER TABLE inbox ADD COLUMN lease_until BIGINT NOT NULL DEFAULT 0;
CREATE INDEX operations_claimed ON operations(claimed_by, state);
CREATE INDEX inbox_claimed ON inbox(claimed_by, handled_at);
