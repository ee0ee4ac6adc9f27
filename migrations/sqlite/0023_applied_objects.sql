-- Objects created by server-side apply (`POST /api/apply`, issue #14).
--
-- One row per manifest object: (account, kind, name) names it across
-- applies; object_id is the API object it stands for (for a Playspec: its
-- current revision). apply_set is the set that created it: `--prune`
-- deletes only rows of its own set that a new apply no longer lists.
-- spec: the last applied spec, canonical JSON with secret values replaced
-- by keyed digests (for diffs); digest: a hash of it. live: the object's
-- settable fields as apply left them (canonical JSON), so a change made
-- outside apply is seen and undone by the next apply. version grows with
-- every write of the row: a concurrent apply that read an older version
-- fails with 409 instead of overwriting.
CREATE TABLE applied_objects (
    id          INTEGER PRIMARY KEY AUTOINCREMENT,
    account_id  INTEGER NOT NULL REFERENCES accounts (id) ON DELETE CASCADE,
    kind        TEXT NOT NULL,
    name        TEXT NOT NULL,
    apply_set   TEXT,
    object_id   INTEGER NOT NULL,
    labels      TEXT NOT NULL DEFAULT '{}',
    spec        TEXT NOT NULL,
    digest      TEXT NOT NULL,
    live        TEXT NOT NULL,
    revision    TEXT,
    version     INTEGER NOT NULL DEFAULT 1,
    created_at  TEXT NOT NULL,
    updated_at  TEXT NOT NULL,
    UNIQUE (account_id, kind, name)
);
CREATE INDEX applied_objects_set ON applied_objects (account_id, apply_set);

-- Playspec revisions apply replaced or pruned while a Playground still
-- used them (one being destroyed holds its Playspec until it is gone):
-- each apply of the account deletes those no Playground holds any more.
CREATE TABLE applied_retired (
    playspec_id  INTEGER PRIMARY KEY,
    account_id   INTEGER NOT NULL REFERENCES accounts (id) ON DELETE CASCADE
);
