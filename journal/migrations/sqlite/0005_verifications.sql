-- Requests to verify an unknown outcome: someone (an outside agent, a person) asks
-- the task's approvers to look and answer It arrived / It did not arrive. Any
-- process may record one; the process that owns the operation's transport shows it
-- and sets shown_at, so that it is shown once.
CREATE TABLE verifications (
	seq          INTEGER PRIMARY KEY AUTOINCREMENT,
	operation_id TEXT NOT NULL REFERENCES operations(id),
	transport    TEXT NOT NULL,
	asked_by     TEXT NOT NULL,
	asked_at     INTEGER NOT NULL,
	shown_at     INTEGER NOT NULL DEFAULT 0
);
CREATE INDEX verifications_waiting ON verifications(transport, shown_at);

-- The owner looks every second for approvals other processes asked for: those of
-- the last moments, by creation time, not every approval still waiting.
CREATE INDEX approvals_pending_created ON approvals(decision, created_at);
