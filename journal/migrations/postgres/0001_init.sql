-- The schema of SQLite's migrations 0001..0006 as it stands after them, for
-- PostgreSQL. Times are Unix milliseconds (BIGINT), as in SQLite. Tables that
-- SQLite orders by rowid (operations, approvals, inbox) carry an explicit seq.

CREATE TABLE tasks (
	id           TEXT PRIMARY KEY,
	requester    BIGINT NOT NULL,
	chat         TEXT NOT NULL DEFAULT '',
	summary      TEXT NOT NULL DEFAULT '',
	policy       TEXT NOT NULL,
	retries_used INTEGER NOT NULL DEFAULT 0,
	repairs_used INTEGER NOT NULL DEFAULT 0,
	waited_ms    BIGINT NOT NULL DEFAULT 0,
	created_at   BIGINT NOT NULL,
	origin       TEXT NOT NULL DEFAULT '',
	surface      TEXT NOT NULL DEFAULT ''
);
CREATE UNIQUE INDEX tasks_origin ON tasks(origin) WHERE origin != '';

CREATE TABLE operations (
	id              TEXT PRIMARY KEY,
	seq             BIGINT GENERATED ALWAYS AS IDENTITY,
	task_id         TEXT NOT NULL REFERENCES tasks(id),
	tool            TEXT NOT NULL,
	fingerprint     TEXT NOT NULL,
	payload         TEXT NOT NULL,
	payload_sha256  TEXT NOT NULL,
	fix             TEXT NOT NULL DEFAULT '',
	state           TEXT NOT NULL,
	attempts        INTEGER NOT NULL DEFAULT 0,
	parts_done      INTEGER NOT NULL DEFAULT 0,
	evidence        TEXT NOT NULL DEFAULT '',
	retry_at        BIGINT NOT NULL DEFAULT 0,
	result          TEXT NOT NULL DEFAULT '',
	envelope        TEXT NOT NULL DEFAULT '',
	created_at      BIGINT NOT NULL,
	updated_at      BIGINT NOT NULL,
	surface         TEXT NOT NULL DEFAULT '',
	transport       TEXT NOT NULL DEFAULT '',
	verdict         TEXT NOT NULL DEFAULT ''
);
CREATE INDEX operations_state ON operations(state);
CREATE INDEX operations_task ON operations(task_id, fingerprint);
CREATE INDEX operations_target ON operations((payload::jsonb ->> 'target'), created_at);
CREATE INDEX operations_transport ON operations(transport, state);
CREATE INDEX operations_created ON operations(created_at, seq);

CREATE TABLE attempts (
	operation_id TEXT NOT NULL REFERENCES operations(id),
	n            INTEGER NOT NULL,
	started_at   BIGINT NOT NULL,
	finished_at  BIGINT NOT NULL DEFAULT 0,
	outcome      TEXT NOT NULL DEFAULT '',
	detail       TEXT NOT NULL DEFAULT '',
	PRIMARY KEY (operation_id, n)
);

CREATE TABLE approvals (
	id             TEXT PRIMARY KEY,
	seq            BIGINT GENERATED ALWAYS AS IDENTITY,
	operation_id   TEXT NOT NULL REFERENCES operations(id),
	payload_sha256 TEXT NOT NULL,
	requester      BIGINT NOT NULL,
	created_at     BIGINT NOT NULL,
	expires_at     BIGINT NOT NULL,
	decision       TEXT NOT NULL DEFAULT '',
	decided_by     BIGINT NOT NULL DEFAULT 0,
	decided_at     BIGINT NOT NULL DEFAULT 0
);
CREATE INDEX approvals_operation ON approvals(operation_id);
CREATE INDEX approvals_pending ON approvals(decision, expires_at);
CREATE INDEX approvals_pending_created ON approvals(decision, created_at);

CREATE TABLE transitions (
	seq          BIGINT GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
	operation_id TEXT NOT NULL REFERENCES operations(id),
	from_state   TEXT NOT NULL,
	to_state     TEXT NOT NULL,
	reason       TEXT NOT NULL,
	at           BIGINT NOT NULL
);
CREATE INDEX transitions_operation ON transitions(operation_id, seq);

CREATE TABLE cards (
	ref        TEXT NOT NULL,
	chat_id    BIGINT NOT NULL,
	message_id BIGINT NOT NULL,
	text       TEXT NOT NULL,
	created_at BIGINT NOT NULL,
	PRIMARY KEY (ref, chat_id, message_id)
);

CREATE TABLE inbox (
	key         TEXT PRIMARY KEY,
	seq         BIGINT GENERATED ALWAYS AS IDENTITY,
	update_id   BIGINT NOT NULL,
	body        TEXT NOT NULL,
	received_at BIGINT NOT NULL,
	handled_at  BIGINT NOT NULL DEFAULT 0
);
CREATE INDEX inbox_handled ON inbox(handled_at, received_at);

CREATE TABLE verifications (
	seq          BIGINT GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
	operation_id TEXT NOT NULL REFERENCES operations(id),
	transport    TEXT NOT NULL,
	asked_by     TEXT NOT NULL,
	asked_at     BIGINT NOT NULL,
	shown_at     BIGINT NOT NULL DEFAULT 0
);
CREATE INDEX verifications_waiting ON verifications(transport, shown_at);

CREATE TABLE agent_sessions (
	chat       TEXT NOT NULL,
	provider   TEXT NOT NULL,
	session_id TEXT NOT NULL,
	updated_at BIGINT NOT NULL,
	PRIMARY KEY (chat, provider)
);
