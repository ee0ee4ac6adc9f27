-- Foundation: accounts, users, API keys, quotas and the events outbox.
-- Conventions (both backends): timestamps are fixed-width RFC 3339 UTC text
-- (see core/src/time.rs); flags are integers 0/1 (sqlx's Any driver cannot
-- carry SQLite booleans).

CREATE TABLE accounts (
    id          INTEGER PRIMARY KEY AUTOINCREMENT,
    name        TEXT NOT NULL UNIQUE,
    created_at  TEXT NOT NULL
);

CREATE TABLE users (
    id          INTEGER PRIMARY KEY AUTOINCREMENT,
    account_id  INTEGER NOT NULL REFERENCES accounts (id) ON DELETE CASCADE,
    name        TEXT NOT NULL,
    created_at  TEXT NOT NULL,
    UNIQUE (account_id, name)
);

CREATE TABLE api_keys (
    id            INTEGER PRIMARY KEY AUTOINCREMENT,
    account_id    INTEGER NOT NULL REFERENCES accounts (id) ON DELETE CASCADE,
    user_id       INTEGER NOT NULL REFERENCES users (id) ON DELETE CASCADE,
    label         TEXT NOT NULL,
    client_id     TEXT NOT NULL UNIQUE,
    token_digest  TEXT NOT NULL UNIQUE,
    scopes        TEXT NOT NULL,
    expires_at    TEXT,
    created_at    TEXT NOT NULL,
    last_used_at  TEXT
);
CREATE INDEX api_keys_account ON api_keys (account_id);

-- Per-account overrides of the configured default quotas.
CREATE TABLE account_quotas (
    account_id  INTEGER NOT NULL REFERENCES accounts (id) ON DELETE CASCADE,
    resource    TEXT NOT NULL,
    max_count   INTEGER NOT NULL,
    PRIMARY KEY (account_id, resource)
);

-- The outbox: written in the same transaction as the change it reports;
-- webhook delivery reads undispatched rows in id order.
CREATE TABLE events (
    id               INTEGER PRIMARY KEY AUTOINCREMENT,
    account_id       INTEGER NOT NULL REFERENCES accounts (id) ON DELETE CASCADE,
    event_type       TEXT NOT NULL,
    entity_type      TEXT NOT NULL,
    entity_id        INTEGER NOT NULL,
    action           TEXT NOT NULL,
    occurred_at      TEXT NOT NULL,
    playground_name  TEXT,
    actor_type       TEXT,
    actor_id         INTEGER,
    metadata         TEXT NOT NULL DEFAULT '{}',
    dispatched_at    TEXT
);
CREATE INDEX events_undispatched ON events (id) WHERE dispatched_at IS NULL;
CREATE INDEX events_account ON events (account_id, id);
