-- Periodic work done once per interval however many processes or restarts
-- (SQLite's 0009_periodic.sql): when it was last done, by name. Taking a turn
-- is one compare-and-set on its row.
CREATE TABLE periodic (
	name    TEXT PRIMARY KEY,
	done_at BIGINT NOT NULL
);
