-- Schedules (issue #30): a template whose latest version has an enabled
-- svc.schedule_config runs on its cron once the account says where
-- (playroom_id) and with what (variables, sealed). One schedule per
-- template; it keeps its settings and history across versions.
CREATE TABLE schedules (
    id                    INTEGER PRIMARY KEY AUTOINCREMENT,
    account_id            INTEGER NOT NULL REFERENCES accounts (id) ON DELETE CASCADE,
    template_id           INTEGER NOT NULL UNIQUE REFERENCES import_templates (id) ON DELETE CASCADE,
    -- The latest version's schedule_config as play reads it (cron,
    -- time_zone, concurrency_policy, starting_deadline_seconds); NULL: the
    -- latest version has no enabled schedule.
    config                TEXT,
    config_version        INTEGER NOT NULL,
    playroom_id           INTEGER,
    variables             TEXT,
    paused                INTEGER NOT NULL DEFAULT 0,
    -- The first fire time not handled yet (NULL: not running).
    next_at               TEXT,
    last_success_at       TEXT,
    last_failure_at       TEXT,
    consecutive_failures  INTEGER NOT NULL DEFAULT 0,
    created_at            TEXT NOT NULL,
    updated_at            TEXT NOT NULL
);
CREATE INDEX schedules_account ON schedules (account_id);

-- One row per (schedule, scheduled time): the unique index is what keeps
-- a crash, a restart or a second replica from starting a time twice.
CREATE TABLE schedule_runs (
    id             INTEGER PRIMARY KEY AUTOINCREMENT,
    schedule_id    INTEGER NOT NULL REFERENCES schedules (id) ON DELETE CASCADE,
    scheduled_at   TEXT NOT NULL,
    status         TEXT NOT NULL,
    reason         TEXT,
    playground_id  INTEGER,
    started_at     TEXT,
    finished_at    TEXT,
    exit_code      INTEGER,
    log_tail       TEXT,
    UNIQUE (schedule_id, scheduled_at)
);
CREATE INDEX schedule_runs_open ON schedule_runs (schedule_id, status);
