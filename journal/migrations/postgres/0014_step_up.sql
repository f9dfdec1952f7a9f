-- SQLite's 0017_step_up.sql, with BIGINT columns.
-- A second factor bound to the payload (policy step_up): the factor an
-- approval asks of each approver beside the tap ('' for none), and the factor
-- each vote was given with ('' for a tap alone). An approval that asks one
-- records a vote for every approver, so that what they gave is kept.
ALTER TABLE approvals ADD COLUMN step_up TEXT NOT NULL DEFAULT '';
ALTER TABLE approval_votes ADD COLUMN step_up TEXT NOT NULL DEFAULT '';

-- One person's TOTP factor, enrolled on the machine (countersign approver
-- totp), never through chat. Kept here so that every replica checks the same
-- codes: last_step is the time step of the last code used (a code approves
-- once, on any replica), wrong the wrong codes in a row, and locked_until
-- (ms, 0: not locked) when the lock that enough of them set ends.
CREATE TABLE totp_factors (
	user_id      BIGINT PRIMARY KEY,
	secret       TEXT NOT NULL,
	created_at   BIGINT NOT NULL,
	last_step    BIGINT NOT NULL DEFAULT 0,
	wrong        BIGINT NOT NULL DEFAULT 0,
	locked_until BIGINT NOT NULL DEFAULT 0
);
