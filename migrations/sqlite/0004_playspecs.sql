-- Playspecs: Compose YAML plus classified services, with mounted files and
-- registry credentials. A Playspec is locked while Playgrounds reference it
-- (derived from playgrounds.playspec_id, never stored).

CREATE TABLE playspecs (
    id                 INTEGER PRIMARY KEY AUTOINCREMENT,
    account_id         INTEGER NOT NULL REFERENCES accounts (id) ON DELETE CASCADE,
    name               TEXT NOT NULL,
    description        TEXT NOT NULL DEFAULT '',
    base_compose_yaml  TEXT NOT NULL,
    services           TEXT NOT NULL DEFAULT '[]',
    persist_volumes    INTEGER NOT NULL DEFAULT 0,
    created_at         TEXT NOT NULL,
    updated_at         TEXT NOT NULL,
    UNIQUE (account_id, name)
);

CREATE TABLE playspec_mounted_files (
    id               INTEGER PRIMARY KEY AUTOINCREMENT,
    playspec_id      INTEGER NOT NULL REFERENCES playspecs (id) ON DELETE CASCADE,
    name             TEXT NOT NULL,
    mount_path       TEXT NOT NULL,
    target_services  TEXT NOT NULL DEFAULT '[]',
    readonly         INTEGER NOT NULL DEFAULT 1,
    content          BLOB NOT NULL,
    size             INTEGER NOT NULL,
    sha256           TEXT NOT NULL,
    created_at       TEXT NOT NULL,
    updated_at       TEXT NOT NULL,
    UNIQUE (playspec_id, mount_path)
);

CREATE TABLE playspec_registry_credentials (
    id             INTEGER PRIMARY KEY AUTOINCREMENT,
    playspec_id    INTEGER NOT NULL REFERENCES playspecs (id) ON DELETE CASCADE,
    registry_type  TEXT NOT NULL,
    registry_url   TEXT NOT NULL,
    username       TEXT NOT NULL,
    secret         TEXT NOT NULL,
    created_at     TEXT NOT NULL,
    UNIQUE (playspec_id, registry_url)
);

ALTER TABLE playgrounds ADD COLUMN playspec_id INTEGER REFERENCES playspecs (id);
CREATE INDEX playgrounds_playspec ON playgrounds (playspec_id);
