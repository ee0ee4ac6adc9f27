-- Restores from a backup (issue #53, item 3). A restored store knows
-- nothing of the Playgrounds made after its backup, yet their containers
-- are still on the Playrooms, labelled with ids above the backup's
-- highest (`last_playground_id`). Until `quarantine_until`, the
-- Playroom sweep stops and keeps such objects instead of removing them,
-- and lists them in `quarantined_objects` (`play orphans`).
CREATE TABLE restores (
    id                  INTEGER PRIMARY KEY AUTOINCREMENT,
    restored_at         TEXT NOT NULL,
    backup_created_at   TEXT NOT NULL,
    last_playground_id  INTEGER NOT NULL,
    quarantine_until    TEXT NOT NULL
);

CREATE TABLE quarantined_objects (
    playroom_id     INTEGER NOT NULL REFERENCES playrooms (id) ON DELETE CASCADE,
    -- The engine's id of a container or network, a volume's name.
    object_id       TEXT NOT NULL,
    kind            TEXT NOT NULL,
    name            TEXT NOT NULL,
    -- The Playground id of the object's label (no row has it).
    playground_id   INTEGER NOT NULL,
    quarantined_at  TEXT NOT NULL,
    PRIMARY KEY (playroom_id, object_id)
);
