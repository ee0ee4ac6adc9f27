-- The newest event when a webhook endpoint was disabled (by play or by
-- its owner), so that fan-out still gives it the events recorded while it
-- was enabled: an event recorded before a 410 disabled the endpoint but
-- fanned out after it belongs to the endpoint's backlog, sent when it is
-- enabled again. Event ids, not times: two times can be equal to the
-- millisecond.
ALTER TABLE webhook_endpoints ADD COLUMN disabled_after_event BIGINT;
