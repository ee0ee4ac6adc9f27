-- Services built from Playzones (issue #13).
--
-- playground_sources: the commit each dynamic service of a Playground is
-- built from, pinned by the Playground reconciler's first pass (and again
-- after a rollout, which clears the pins): the branch it resolved
-- (git_config.branch_name, else the svc/branch label, else the
-- Playzone's default branch) and the commit the Playzone's branch index
-- held for it. A rollout deletes the rows, so the next pass pins the
-- branches' current commits.
CREATE TABLE playground_sources (
    playground_id  INTEGER NOT NULL REFERENCES playgrounds (id) ON DELETE CASCADE,
    service        TEXT NOT NULL,
    playzone_id    INTEGER NOT NULL,
    branch         TEXT NOT NULL,
    commit_sha     TEXT NOT NULL,
    created_branch INTEGER NOT NULL DEFAULT 0,
    pinned_at      TEXT NOT NULL,
    PRIMARY KEY (playground_id, service)
);

-- One row per image a Playground's service needed: built (cache_hit 0,
-- with the build's duration and the tail of its log) or found on the
-- Playroom already (cache_hit 1). log_tail is bounded by the reconciler.
CREATE TABLE build_records (
    id             INTEGER PRIMARY KEY AUTOINCREMENT,
    playground_id  INTEGER NOT NULL REFERENCES playgrounds (id) ON DELETE CASCADE,
    service        TEXT NOT NULL,
    commit_sha     TEXT NOT NULL,
    image          TEXT NOT NULL,
    cache_hit      INTEGER NOT NULL,
    succeeded      INTEGER NOT NULL,
    duration_ms    INTEGER NOT NULL DEFAULT 0,
    log_tail       TEXT NOT NULL DEFAULT '',
    created_at     TEXT NOT NULL
);
CREATE INDEX build_records_playground ON build_records (playground_id, id);
