-- Tasks: one request of an operator (a command, an agent's turn), with the policy in
-- force when it started and the budgets it has spent.
CREATE TABLE tasks (
	id           TEXT PRIMARY KEY,
	requester    INTEGER NOT NULL,
	chat         TEXT NOT NULL DEFAULT '',
	summary      TEXT NOT NULL DEFAULT '',
	policy       TEXT NOT NULL,
	retries_used INTEGER NOT NULL DEFAULT 0,
	repairs_used INTEGER NOT NULL DEFAULT 0,
	waited_ms    INTEGER NOT NULL DEFAULT 0,
	created_at   INTEGER NOT NULL
);

-- Operations: one tool call and its payload, in one state of the state machine.
CREATE TABLE operations (
	id              TEXT PRIMARY KEY,
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
	retry_at        INTEGER NOT NULL DEFAULT 0,
	result          TEXT NOT NULL DEFAULT '',
	envelope        TEXT NOT NULL DEFAULT '',
	created_at      INTEGER NOT NULL,
	updated_at      INTEGER NOT NULL
);
CREATE INDEX operations_state ON operations(state);
CREATE INDEX operations_task ON operations(task_id, fingerprint);
CREATE INDEX operations_target ON operations(json_extract(payload, '$.target'), created_at);

-- Attempts: each time a commit's request was about to leave the process.
CREATE TABLE attempts (
	operation_id TEXT NOT NULL REFERENCES operations(id),
	n            INTEGER NOT NULL,
	started_at   INTEGER NOT NULL,
	finished_at  INTEGER NOT NULL DEFAULT 0,
	outcome      TEXT NOT NULL DEFAULT '',
	detail       TEXT NOT NULL DEFAULT '',
	PRIMARY KEY (operation_id, n)
);

-- Approvals: one per request for a human's tap, bound to the payload's hash.
CREATE TABLE approvals (
	id             TEXT PRIMARY KEY,
	operation_id   TEXT NOT NULL REFERENCES operations(id),
	payload_sha256 TEXT NOT NULL,
	requester      INTEGER NOT NULL,
	created_at     INTEGER NOT NULL,
	expires_at     INTEGER NOT NULL,
	decision       TEXT NOT NULL DEFAULT '',
	decided_by     INTEGER NOT NULL DEFAULT 0,
	decided_at     INTEGER NOT NULL DEFAULT 0
);
CREATE INDEX approvals_operation ON approvals(operation_id);
CREATE INDEX approvals_pending ON approvals(decision, expires_at);

-- Transitions: the audit log, one row per state change with its reason.
CREATE TABLE transitions (
	seq          INTEGER PRIMARY KEY AUTOINCREMENT,
	operation_id TEXT NOT NULL REFERENCES operations(id),
	from_state   TEXT NOT NULL,
	to_state     TEXT NOT NULL,
	reason       TEXT NOT NULL,
	at           INTEGER NOT NULL
);
CREATE INDEX transitions_operation ON transitions(operation_id, seq);
