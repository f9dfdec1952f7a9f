-- The indexes of SQLite's 0020_fewer_pages.sql (its tables' rebuilds are
-- SQLite's own: PostgreSQL keeps no counter page, and has no rowid).
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
