-- A request to verify is recorded once per operation per interval: whoever asks
-- again within it gets the earlier request, found by this index.
CREATE INDEX verifications_asked ON verifications(operation_id, asked_at);
