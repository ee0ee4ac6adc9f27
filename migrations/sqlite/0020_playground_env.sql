-- Env files of services built from Playzones and the values play generates
-- for their $$secret(N) placeholders (issue #13, item 4).
--
-- playground_sources.env_file: the service's env file (its Playspec
-- env_file_path) as read at the pinned commit, a JSON object of key ->
-- value with placeholders as written; '{}' without one. Pinned with the
-- commit, so a rollout reads it again.
ALTER TABLE playground_sources ADD COLUMN env_file TEXT NOT NULL DEFAULT '{}';

-- One generated value per Playground and variable name, sealed with the
-- installation's secret box: kept across rollouts and hard restarts (a
-- database volume that persists keeps the password it was made with),
-- replaced only when the file asks for another length, gone with the
-- Playground.
CREATE TABLE playground_generated_env (
    playground_id  INTEGER NOT NULL REFERENCES playgrounds (id) ON DELETE CASCADE,
    name           TEXT NOT NULL,
    length         INTEGER NOT NULL,
    sealed_value   TEXT NOT NULL,
    created_at     TEXT NOT NULL,
    PRIMARY KEY (playground_id, name)
);
