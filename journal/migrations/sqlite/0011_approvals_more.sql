-- Approvals beyond one tap: a quorum (required approvers of one payload), an
-- escalation to a second list of approvers, edits of a payload before its
-- approval, and grants. Each is chained in the audit trail (audit.go).
--
-- required is how many different approvers must approve; escalated_at when the
-- card went to the escalation list (0: not escalated); grant_id the grant that
-- approved it ('' for taps).
ALTER TABLE approvals ADD COLUMN required INTEGER NOT NULL DEFAULT 1;
ALTER TABLE approvals ADD COLUMN escalated_at INTEGER NOT NULL DEFAULT 0;
ALTER TABLE approvals ADD COLUMN grant_id TEXT NOT NULL DEFAULT '';

-- One approver's approval of an approval that needs more than one, or that a
-- grant gave: the decision is recorded when the votes reach required. grant_id
-- names the grant that voted for its approver ('' for a tap).
CREATE TABLE approval_votes (
	approval_id TEXT NOT NULL REFERENCES approvals(id),
	voter       INTEGER NOT NULL,
	at          INTEGER NOT NULL,
	grant_id    TEXT NOT NULL DEFAULT '',
	PRIMARY KEY (approval_id, voter)
);

-- A payload replaced by an approver before anyone approved it: the payload as it
-- was (the operation holds the new one), who edited it, and the approval the
-- edit voided.
CREATE TABLE payload_edits (
	operation_id TEXT NOT NULL REFERENCES operations(id),
	seq          INTEGER NOT NULL,
	old_payload  TEXT NOT NULL,
	old_sha256   TEXT NOT NULL,
	new_sha256   TEXT NOT NULL,
	edited_by    INTEGER NOT NULL,
	at           INTEGER NOT NULL,
	approval_id  TEXT NOT NULL,
	PRIMARY KEY (operation_id, seq)
);

-- An approver's explicit grant. kind 'operations': the listed approvals (their
-- operations and payload hashes, as JSON in items), approved with one tap.
-- kind 'window': commits of tool to target until until_at, approved in the
-- granter's name without a tap, until revoked.
CREATE TABLE grants (
	id         TEXT PRIMARY KEY,
	kind       TEXT NOT NULL,
	granted_by INTEGER NOT NULL,
	created_at INTEGER NOT NULL,
	until_at   INTEGER NOT NULL DEFAULT 0,
	tool       TEXT NOT NULL DEFAULT '',
	target     TEXT NOT NULL DEFAULT '',
	task_id    TEXT NOT NULL DEFAULT '',
	items      TEXT NOT NULL DEFAULT '',
	revoked_by INTEGER NOT NULL DEFAULT 0,
	revoked_at INTEGER NOT NULL DEFAULT 0
);
CREATE INDEX grants_window ON grants(kind, tool, target, until_at);
