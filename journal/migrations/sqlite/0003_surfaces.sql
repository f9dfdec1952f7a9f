-- Who asked for each operation (the surface: telegram, console, ...) and who may
-- deliver it (the transport): a process commits only operations of the transport it
-- owns, so another surface may show them, never deliver them. The verifier's verdict
-- is kept as a value of its own instead of being read back out of a transition.
ALTER TABLE tasks ADD COLUMN surface TEXT NOT NULL DEFAULT '';
ALTER TABLE operations ADD COLUMN surface TEXT NOT NULL DEFAULT '';
ALTER TABLE operations ADD COLUMN transport TEXT NOT NULL DEFAULT '';
ALTER TABLE operations ADD COLUMN verdict TEXT NOT NULL DEFAULT '';

-- Before this, the console's tasks ran in the chat named "console" and everything
-- else came from Telegram.
UPDATE tasks SET surface = CASE WHEN chat = 'console' THEN 'console' ELSE 'telegram' END;
UPDATE operations SET surface = (SELECT surface FROM tasks WHERE tasks.id = operations.task_id);
UPDATE operations SET transport = surface;
UPDATE operations SET verdict = COALESCE((SELECT substr(reason, 11) FROM transitions
	WHERE transitions.operation_id = operations.id AND to_state = 'verified' AND reason LIKE 'verifier: %'
	ORDER BY seq LIMIT 1), '');
CREATE INDEX operations_transport ON operations(transport, state);
