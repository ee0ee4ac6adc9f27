-- Playzones: git repositories that supply code to dynamic services (issue #13).
--
-- credentials: the access token sealed with the master key (SecretBox,
-- bound to `playzone:<id>:credentials`); NULL for none. Never returned.
-- default_branch_pinned: 1 when the user chose default_branch (sync then
-- checks it exists); 0 when sync records the remote's HEAD there.
-- status: pending (never synced since created or its URL or token changed),
-- active (the last sync succeeded), error (the last sync failed;
-- status_message says why, and what was recorded before stays).
-- generation is bumped by every change that asks for a sync (create,
-- update of url, token or branch, POST sync); synced_generation is the one
-- the last sync started from, so a sync asked during a pass runs again.
-- compose_file: the Compose file found at the default branch's root, NULL
-- when none; compose_commit: the commit it was found at.
CREATE TABLE playzones (
    id                     INTEGER PRIMARY KEY AUTOINCREMENT,
    account_id             INTEGER NOT NULL REFERENCES accounts (id) ON DELETE CASCADE,
    name                   TEXT NOT NULL,
    scm_url                TEXT NOT NULL,
    private                INTEGER NOT NULL DEFAULT 0,
    credentials            TEXT,
    default_branch         TEXT,
    default_branch_pinned  INTEGER NOT NULL DEFAULT 0,
    auto_created           INTEGER NOT NULL DEFAULT 0,
    status                 TEXT NOT NULL DEFAULT 'pending',
    status_message         TEXT,
    compose_file           TEXT,
    compose_commit         TEXT,
    generation             INTEGER NOT NULL DEFAULT 1,
    synced_generation      INTEGER NOT NULL DEFAULT 0,
    last_synced_at         TEXT,
    last_sync_attempt_at   TEXT,
    created_at             TEXT NOT NULL,
    updated_at             TEXT NOT NULL,
    UNIQUE (account_id, name)
);
CREATE INDEX playzones_url ON playzones (account_id, scm_url);

-- The branch index a sync recorded: one row per branch of the remote.
CREATE TABLE playzone_branches (
    playzone_id  INTEGER NOT NULL REFERENCES playzones (id) ON DELETE CASCADE,
    name         TEXT NOT NULL,
    commit_sha   TEXT NOT NULL,
    updated_at   TEXT NOT NULL,
    PRIMARY KEY (playzone_id, name)
);
