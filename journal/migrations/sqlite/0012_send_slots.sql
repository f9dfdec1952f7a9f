-- Telegram's flood limits hold per bot, not per process: replicas of one bot
-- take a slot here before each send (telegram's limiter, journal/slots.go), so
-- that all of them together keep under the limits. A pool (scope: the bot's
-- overall budget, or one chat's) has slots 0..n-1. A slot may be taken once
-- free_at (the lease clock, ms) is past; taking it sets free_at to the latest
-- moment its send can still be out, and freeing it to the send's answer plus
-- the pool's span. grant_id tells a taker's hold from a later taker's; open is
-- 1 while the send is out, since taken_at.
CREATE TABLE send_slots (
	scope    TEXT NOT NULL,
	k        INTEGER NOT NULL,
	grant_id TEXT NOT NULL DEFAULT '',
	holder   TEXT NOT NULL DEFAULT '',
	open     INTEGER NOT NULL DEFAULT 0,
	free_at  INTEGER NOT NULL DEFAULT 0,
	taken_at INTEGER NOT NULL DEFAULT 0,
	PRIMARY KEY (scope, k)
);
