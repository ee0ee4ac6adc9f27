-- Webhook endpoints and their deliveries (issue #15).
--
-- webhook_endpoints.secret is the signing secret sealed with the master key
-- (SecretBox, bound to `webhook_endpoint:<id>:secret`); it is set in the
-- transaction that inserts the row, so NULL never survives a commit.
-- events: JSON array of event types; event_filters: JSON object of event
-- type -> array of entity ids (absent or empty: every entity).
-- disabled_reason says why the dispatcher disabled the endpoint (ten
-- consecutive failures, 410 Gone); re-enabling clears it and failure_count.
CREATE TABLE webhook_endpoints (
    id               INTEGER PRIMARY KEY AUTOINCREMENT,
    account_id       INTEGER NOT NULL REFERENCES accounts (id) ON DELETE CASCADE,
    url              TEXT NOT NULL,
    secret           TEXT,
    events           TEXT NOT NULL DEFAULT '[]',
    event_filters    TEXT NOT NULL DEFAULT '{}',
    description      TEXT NOT NULL DEFAULT '',
    enabled          INTEGER NOT NULL DEFAULT 1,
    failure_count    INTEGER NOT NULL DEFAULT 0,
    disabled_reason  TEXT,
    created_at       TEXT NOT NULL,
    updated_at       TEXT NOT NULL
);
CREATE INDEX webhook_endpoints_account ON webhook_endpoints (account_id, id);

-- One row per (endpoint, outbox event), written by the dispatcher before
-- its first attempt, so a crash can neither lose nor duplicate one; the id
-- is the stable delivery id receivers dedupe on.
-- status: pending, succeeded, failed (retrying), abandoned (retries spent).
CREATE TABLE webhook_deliveries (
    id                INTEGER PRIMARY KEY AUTOINCREMENT,
    endpoint_id       INTEGER NOT NULL REFERENCES webhook_endpoints (id) ON DELETE CASCADE,
    event_id          INTEGER NOT NULL REFERENCES events (id) ON DELETE CASCADE,
    status            TEXT NOT NULL DEFAULT 'pending',
    attempts          INTEGER NOT NULL DEFAULT 0,
    next_attempt_at   TEXT,
    last_status_code  INTEGER,
    last_error        TEXT,
    last_duration_ms  INTEGER,
    response_snippet  TEXT,
    created_at        TEXT NOT NULL,
    updated_at        TEXT NOT NULL,
    UNIQUE (endpoint_id, event_id)
);
CREATE INDEX webhook_deliveries_endpoint ON webhook_deliveries (endpoint_id, id);
CREATE INDEX webhook_deliveries_due ON webhook_deliveries (next_attempt_at) WHERE status IN ('pending', 'failed');
