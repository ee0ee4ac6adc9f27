-- An account's launch defaults (issue #52, item 6): the Playroom a new
-- schedule or trigger of the account launches on, so a template whose
-- version enables one runs without another call (NULL: none, the setting
-- waits for a PATCH). launch_may_read_playzones records whether the key
-- that chose it may read Playzones (what a pull-request trigger needs of
-- the key that starts it). Cleared when that Playroom is deleted.
ALTER TABLE accounts ADD COLUMN launch_playroom_id BIGINT;
ALTER TABLE accounts ADD COLUMN launch_may_read_playzones INTEGER NOT NULL DEFAULT 0;
