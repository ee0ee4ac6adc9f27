-- Pull-request triggers (issue #30). A Playzone attached through a
-- source-hosting installation keeps the provider's pull requests on its
-- repository: each one's state and head, as the provider's list and its
-- webhook deliveries said; the later `pr_updated_at` (the provider's own
-- time of the change) wins, so a stale list never reopens a pull request
-- a delivery closed. Builds pin `pull/<number>/head` to `head_sha`.
CREATE TABLE playzone_pulls (
    playzone_id    BIGINT NOT NULL REFERENCES playzones (id) ON DELETE CASCADE,
    number         BIGINT NOT NULL,
    state          TEXT NOT NULL,
    head_sha       TEXT NOT NULL,
    head_ref       TEXT NOT NULL,
    -- The head repository's full name; NULL when it was deleted.
    head_repo      TEXT,
    base_ref       TEXT NOT NULL,
    fork           BIGINT NOT NULL,
    title          TEXT NOT NULL,
    html_url       TEXT NOT NULL,
    pr_updated_at  TEXT NOT NULL,
    recorded_at    TEXT NOT NULL,
    PRIMARY KEY (playzone_id, number)
);

-- What a target told the provider: the pull request comment it edits,
-- the deployment of its commit, and a digest of the last report (so a
-- pass reports only what changed).
ALTER TABLE trigger_targets ADD COLUMN comment_id TEXT;
ALTER TABLE trigger_targets ADD COLUMN deployment_id TEXT;
ALTER TABLE trigger_targets ADD COLUMN deployment_sha TEXT;
ALTER TABLE trigger_targets ADD COLUMN reported TEXT;

-- Whether the key that last started the trigger (set its Playroom, or
-- unpaused it) held playzones:read: a pull-request trigger reads its
-- repository through the account's installation, which only such a key
-- may have a Playground built from.
ALTER TABLE triggers ADD COLUMN may_read_playzones BIGINT NOT NULL DEFAULT 0;
