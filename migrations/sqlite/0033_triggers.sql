-- Triggers (issue #30): a template whose latest version has an enabled
-- svc.trigger_config keeps Playgrounds that follow a repository's
-- branches, once the account says where (playroom_id) and with what
-- (variables, sealed). One trigger per template; it keeps its settings
-- and targets across versions.
CREATE TABLE triggers (
    id              INTEGER PRIMARY KEY AUTOINCREMENT,
    account_id      INTEGER NOT NULL REFERENCES accounts (id) ON DELETE CASCADE,
    template_id     INTEGER NOT NULL UNIQUE REFERENCES import_templates (id) ON DELETE CASCADE,
    -- The latest version's trigger_config as play reads it; NULL: the
    -- latest version has no enabled trigger.
    config          TEXT,
    config_version  INTEGER NOT NULL,
    playroom_id     INTEGER,
    variables       TEXT,
    paused          INTEGER NOT NULL DEFAULT 0,
    -- What the last pass found in the way, in words (NULL: converged).
    problem         TEXT,
    playzone_id     INTEGER,
    last_pass_at    TEXT,
    created_at      TEXT NOT NULL,
    updated_at      TEXT NOT NULL
);
CREATE INDEX triggers_account ON triggers (account_id);
CREATE INDEX triggers_playzone ON triggers (playzone_id);

-- One row per (trigger, ref): the branch (or pull request) a trigger
-- follows and the Playground it keeps for it.
CREATE TABLE trigger_targets (
    id             INTEGER PRIMARY KEY AUTOINCREMENT,
    trigger_id     INTEGER NOT NULL REFERENCES triggers (id) ON DELETE CASCADE,
    ref_kind       TEXT NOT NULL,
    ref_name       TEXT NOT NULL,
    status         TEXT NOT NULL,
    reason         TEXT,
    playground_id  INTEGER,
    commit_sha     TEXT,
    generation     INTEGER NOT NULL DEFAULT 0,
    created_at     TEXT NOT NULL,
    updated_at     TEXT NOT NULL,
    UNIQUE (trigger_id, ref_kind, ref_name)
);
CREATE INDEX trigger_targets_playground ON trigger_targets (playground_id);
