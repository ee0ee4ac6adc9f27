-- Who marked a Playroom trusted, and when (issue #10, finding 3): trust
-- lifts the Compose policy, so it is an operator's act and is audited.
-- A local Playroom (play's own engine) can never be trusted.
ALTER TABLE playrooms ADD COLUMN trusted_at TEXT;
ALTER TABLE playrooms ADD COLUMN trusted_by_key_id BIGINT;
UPDATE playrooms SET trusted = 0 WHERE connection = 'local';
