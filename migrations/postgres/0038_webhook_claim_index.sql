-- A claim reads each enabled endpoint's oldest due deliveries, a few per
-- endpoint (issue #33, item 7): with this index that is a short range read
-- per endpoint, not a sort of every due delivery on each claim. The status
-- list is written out in the claim's SQL so the partial index applies.
CREATE INDEX webhook_deliveries_endpoint_due ON webhook_deliveries (endpoint_id, next_attempt_at, id)
    WHERE status IN ('pending', 'failed');
