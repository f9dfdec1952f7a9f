-- Strangers told: a stranger (someone who is no operator nor approver) who
-- writes to the bot is told it is not theirs once per silence (an hour), by
-- whichever replica marks the row first (journal/strangers.go). told_at is by
-- the lease clock (ms); grant_id tells one telling from a later one, so that a
-- replica whose notice did not go gives back its own mark only. The leader
-- deletes the rows older than a day.
CREATE TABLE strangers_told (
	transport TEXT NOT NULL,
	user_id   INTEGER NOT NULL,
	told_at   INTEGER NOT NULL,
	grant_id  TEXT NOT NULL,
	PRIMARY KEY (transport, user_id)
);
CREATE INDEX strangers_told_at ON strangers_told(told_at);
