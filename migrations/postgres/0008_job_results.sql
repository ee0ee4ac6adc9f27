-- The result of a finished job-mode Playground and the logs its services
-- left, kept after its host objects are gone so that `job_result` and
-- `/logs/<service>` (source `cached`) can still answer. Both go with the
-- Playground row (ON DELETE CASCADE).
--
-- `host_released_at` is NULL from completion until the reconciler has
-- removed every host object of the Playground; from then on the Playground
-- holds nothing on its Playroom (it no longer locks its Playspec nor counts
-- against the Playground quota).

CREATE TABLE playground_job_results (
    playground_id     BIGINT PRIMARY KEY REFERENCES playgrounds (id) ON DELETE CASCADE,
    exit_code         BIGINT NOT NULL,
    completed_at      TEXT NOT NULL,
    tail_logs         TEXT NOT NULL,
    host_released_at  TEXT
);

-- One row per service that ran: its last lines (a JSON array of strings,
-- oldest first, at most 1000).
CREATE TABLE playground_job_logs (
    playground_id  BIGINT NOT NULL REFERENCES playgrounds (id) ON DELETE CASCADE,
    service        TEXT NOT NULL,
    lines          TEXT NOT NULL,
    PRIMARY KEY (playground_id, service)
);
