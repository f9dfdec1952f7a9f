-- Periodic work done once per interval however many processes or restarts (the
-- digest of unknown outcomes): when it was last done, by name. Taking a turn is
-- one compare-and-set on its row.
CREATE TABLE periodic (
	name    TEXT PRIMARY KEY,
	done_at INTEGER NOT NULL
);
