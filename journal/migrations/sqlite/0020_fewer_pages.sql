-- A send's four commits write fewer pages to the log: 61 a send before, 40
-- after (docs/performance.md), each page a write the commit waits for.
--
-- The indexes that find operations and approvals by where they stand hold
-- only those still in play. Before, three indexes of operations carried state
-- (state; transport, state; claimed_by, state) over every operation ever
-- written, and two of approvals carried decision over every approval: each
-- move of a send took its entry out of one state's leaves and put it into
-- another's, in each of them, a few pages written to the log a move. The
-- queries that read by state ask for operations in play (a pending approval,
-- an outcome to verify, a send under way), and those are few: an index of
-- them alone is small, stays in the cache, and a finished operation leaves it
-- for good. Every query that is to use one of these indexes carries the
-- index's own condition in its text (journal.liveState, decision = ''), since
-- a planner uses a partial index only for a query that implies its condition.
DROP INDEX operations_state;
DROP INDEX operations_transport;
DROP INDEX operations_claimed;
CREATE INDEX operations_live ON operations(state, transport)
	WHERE state <> 'committed' AND state <> 'rejected' AND state <> 'expired' AND state <> 'failed' AND state <> 'cancelled';
-- The operations whose outcome has a note in the vault: the few that were
-- unknown once, which a leader reads back at its start.
CREATE INDEX operations_noted ON operations(transport) WHERE envelope <> '';
-- The operations a person rejected, by when: the verifier reads those of the
-- last while before each send (a text rejected a moment ago is not asked
-- again). The state indexes served it; a rejection is rare, and its entry is
-- written once.
CREATE INDEX operations_rejected ON operations(updated_at) WHERE state = 'rejected';
DROP INDEX approvals_pending;
DROP INDEX approvals_pending_created;
CREATE INDEX approvals_open ON approvals(expires_at) WHERE decision = '';
CREATE INDEX approvals_open_created ON approvals(created_at) WHERE decision = '';
-- A card by the message it is: a reply to one of the bot's messages (a code,
-- an edit) is read by the message it answers (journal.CardAt), which scanned
-- every card ever shown.
CREATE INDEX cards_message ON cards(chat_id, message_id);

-- Two tables of a send, written again without a page each commit did not need.
-- transitions loses AUTOINCREMENT: its counter lived in sqlite_sequence, a page
-- of its own rewritten by every commit that moved an operation. A transition
-- is never deleted, so its seq is still the highest before it plus one, and
-- every seq stays what it was. attempts is keyed by (operation_id, n) alone
-- and kept in that key's order (WITHOUT ROWID): one tree instead of a table
-- beside the index of its key.
CREATE TABLE transitions_new (
	seq          INTEGER PRIMARY KEY,
	operation_id TEXT NOT NULL REFERENCES operations(id),
	from_state   TEXT NOT NULL,
	to_state     TEXT NOT NULL,
	reason       TEXT NOT NULL,
	at           INTEGER NOT NULL
);
INSERT INTO transitions_new(seq, operation_id, from_state, to_state, reason, at)
	SELECT seq, operation_id, from_state, to_state, reason, at FROM transitions ORDER BY seq;
DROP TABLE transitions;
ALTER TABLE transitions_new RENAME TO transitions;
CREATE INDEX transitions_operation ON transitions(operation_id, seq);
DELETE FROM sqlite_sequence WHERE name = 'transitions';
CREATE TABLE attempts_new (
	operation_id TEXT NOT NULL REFERENCES operations(id),
	n            INTEGER NOT NULL,
	started_at   INTEGER NOT NULL,
	finished_at  INTEGER NOT NULL DEFAULT 0,
	outcome      TEXT NOT NULL DEFAULT '',
	detail       TEXT NOT NULL DEFAULT '',
	PRIMARY KEY (operation_id, n)
) WITHOUT ROWID;
INSERT INTO attempts_new SELECT operation_id, n, started_at, finished_at, outcome, detail FROM attempts;
DROP TABLE attempts;
ALTER TABLE attempts_new RENAME TO attempts;
