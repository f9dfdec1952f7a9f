-- The inbox is keyed by what an update carries, not by its number: after a week
-- without updates Telegram may number them afresh, so one update_id can later carry
-- another message, which must not be dropped as a repeat of the old one, while a
-- redelivered update carries the same message or tap under the same key. Keys are
-- "message:<chat id>:<message id>", "callback_query:<query id>", or
-- "update:<update_id>" for anything else; rows stored before keys get theirs here.
CREATE TABLE inbox_keyed (
	key         TEXT PRIMARY KEY,
	update_id   INTEGER NOT NULL,
	body        TEXT NOT NULL,
	received_at INTEGER NOT NULL,
	handled_at  INTEGER NOT NULL DEFAULT 0
);
INSERT OR IGNORE INTO inbox_keyed(key, update_id, body, received_at, handled_at)
SELECT CASE
		WHEN NOT json_valid(body) THEN 'update:' || update_id
		WHEN json_type(body, '$.message.message_id') = 'integer' AND json_type(body, '$.message.chat.id') = 'integer'
			THEN 'message:' || json_extract(body, '$.message.chat.id') || ':' || json_extract(body, '$.message.message_id')
		WHEN json_type(body, '$.callback_query.id') = 'text'
			THEN 'callback_query:' || json_extract(body, '$.callback_query.id')
		ELSE 'update:' || update_id
	END, update_id, body, received_at, handled_at
FROM inbox ORDER BY update_id;
-- A task names the update that started it; before keys it named its number. An
-- update still in the inbox keeps naming its task, so that a replay after the
-- upgrade continues that task instead of starting a second one.
UPDATE tasks SET origin = 'telegram:' || (SELECT k.key FROM inbox_keyed k
		WHERE k.update_id = CAST(substr(tasks.origin, 17) AS INTEGER))
	WHERE origin LIKE 'telegram:update:%' AND EXISTS (SELECT 1 FROM inbox_keyed k
		WHERE k.update_id = CAST(substr(tasks.origin, 17) AS INTEGER));
DROP TABLE inbox;
ALTER TABLE inbox_keyed RENAME TO inbox;
CREATE INDEX inbox_handled ON inbox(handled_at, received_at);
