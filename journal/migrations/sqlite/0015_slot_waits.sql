-- Slot queues: a taker that found a pool of send_slots full waits in line, so
-- that the slots go to the replicas' senders in the order they began to wait,
-- not to whichever replica asks most often (journal/slots.go). One row per
-- pool and holder: the holder's sender that has waited longest (a process lets
-- one sender at a time wait on a pool), since when (the lease clock, ms), last
-- seen at its latest take. A row not seen for a while is a waiter that is gone.
CREATE TABLE slot_waits (
	scope   TEXT NOT NULL,
	holder  TEXT NOT NULL,
	since   INTEGER NOT NULL,
	seen_at INTEGER NOT NULL,
	PRIMARY KEY (scope, holder)
);
