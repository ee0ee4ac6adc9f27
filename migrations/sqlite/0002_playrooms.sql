-- Playrooms: Docker hosts reached over SSH (or the local engine's socket).
-- Secrets (the SSH private key) are sealed with the master key; the pinned
-- host key is an OpenSSH public key line or a SHA256 fingerprint.

CREATE TABLE playrooms (
    id                  INTEGER PRIMARY KEY AUTOINCREMENT,
    account_id          INTEGER NOT NULL REFERENCES accounts (id) ON DELETE CASCADE,
    name                TEXT NOT NULL,
    status              TEXT NOT NULL DEFAULT 'active',
    connection          TEXT NOT NULL DEFAULT 'ssh',
    host                TEXT NOT NULL,
    port                INTEGER NOT NULL,
    ssh_user            TEXT NOT NULL,
    docker_socket       TEXT NOT NULL,
    ssh_private_key     TEXT,
    ssh_public_key      TEXT,
    host_key            TEXT,
    host_key_pinned_at  TEXT,
    domains             TEXT NOT NULL DEFAULT '[]',
    acme_email          TEXT,
    trusted             INTEGER NOT NULL DEFAULT 0,
    tutorial            INTEGER NOT NULL DEFAULT 0,
    last_checked_at     TEXT,
    last_transport      TEXT,
    last_error          TEXT,
    created_at          TEXT NOT NULL,
    updated_at          TEXT NOT NULL,
    UNIQUE (account_id, name)
);

-- Playgrounds: the Playground lifecycle extends this table. It exists now so
-- that Playroom deletion can refuse while Playgrounds are active.
CREATE TABLE playgrounds (
    id           INTEGER PRIMARY KEY AUTOINCREMENT,
    account_id   INTEGER NOT NULL REFERENCES accounts (id) ON DELETE CASCADE,
    playroom_id  INTEGER NOT NULL REFERENCES playrooms (id),
    name         TEXT NOT NULL,
    status       TEXT NOT NULL,
    created_at   TEXT NOT NULL,
    updated_at   TEXT NOT NULL
);
CREATE INDEX playgrounds_playroom ON playgrounds (playroom_id);
