-- The dispatcher's claim on a delivery it is sending (issue #15): a replica
-- sets claimed_by and claimed_until before its attempt and clears them when
-- it records the outcome. Another replica takes a delivery only when it is
-- unclaimed or its claim expired (the claimer crashed), so two replicas do
-- not send the same attempt at once; a crash mid-attempt means the attempt
-- is sent again after the claim expires (at-least-once).
ALTER TABLE webhook_deliveries ADD COLUMN claimed_by TEXT;
ALTER TABLE webhook_deliveries ADD COLUMN claimed_until TEXT;
