-- SQLite's 0019_seen_key.sql.
-- Each operation's seen key (verifier.SeenKey of its payload, given by
-- journal.WithSeenKey): the duplicate check reads only the operations of a
-- payload's key, not every one sent to its target in the window. NULL: not
-- known (an operation written before this column, or by a process opened
-- without the key); the check reads those whole. A change to the key's
-- definition must set the column back to NULL.
ALTER TABLE operations ADD COLUMN seen_key TEXT;
