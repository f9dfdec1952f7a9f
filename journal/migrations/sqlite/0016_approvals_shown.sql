-- Approvals shown: when an operator last published an approval for its surfaces
-- to show (ms, 0: never), and which run of a process did. The owner's
-- watch shows the approvals nobody showed, and shows again one whose card has
-- not appeared a while after it was published (operator/sweep.go): this is what
-- it reads, in place of a memory each process kept of its own.
ALTER TABLE approvals ADD COLUMN shown_at INTEGER NOT NULL DEFAULT 0;
ALTER TABLE approvals ADD COLUMN shown_by TEXT NOT NULL DEFAULT '';
