-- scm_deliveries.body_sha256: the hex SHA-256 of a delivery's raw body,
-- the bytes its signature covers (issue #49, item 14). The delivery id
-- (X-GitHub-Delivery) is not signed: a signed body sent again under a new
-- id is found by this digest and changes nothing. GitHub never sends one
-- body under two ids (its "Redeliver" keeps the id), and two events differ
-- in their bodies (docs/repositories.md, "Webhook deliveries").
--
-- NULL on rows recorded before this migration: they age out with the
-- retention (store::scm_deliveries), and a unique index admits any number
-- of NULLs on SQLite and PostgreSQL alike.
ALTER TABLE scm_deliveries ADD COLUMN body_sha256 TEXT;
CREATE UNIQUE INDEX scm_deliveries_body ON scm_deliveries (provider, body_sha256);
