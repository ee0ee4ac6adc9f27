-- Reachability of a Playroom's Docker engine as the reconcilers last found
-- it (not `test_connection`'s `last_*`): `reachable` is NULL until they
-- first try, then 1 or 0; `unreachable_since` is the first failed attempt
-- after a success (NULL while reachable); `unreachable_reason` says why the
-- last attempt failed. Written only when it changes.
ALTER TABLE playrooms ADD COLUMN reachable BIGINT;
ALTER TABLE playrooms ADD COLUMN unreachable_since TEXT;
ALTER TABLE playrooms ADD COLUMN unreachable_reason TEXT;
