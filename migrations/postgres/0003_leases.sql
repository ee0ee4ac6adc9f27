-- Reconcile leases: at most one replica reconciles an object at a time.
-- One row per (reconciler, object); the row outlives its claims so the
-- fencing token only ever grows. A released lease has expires_at set to the
-- epoch. Timestamps are fixed-width RFC 3339 UTC text (core/src/time.rs).

CREATE TABLE reconcile_leases (
    reconciler  TEXT NOT NULL,
    object_id   BIGINT NOT NULL,
    owner       TEXT NOT NULL,
    token       BIGINT NOT NULL,
    claimed_at  TEXT NOT NULL,
    expires_at  TEXT NOT NULL,
    PRIMARY KEY (reconciler, object_id)
);
