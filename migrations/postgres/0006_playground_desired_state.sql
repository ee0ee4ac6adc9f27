-- The desired state of a Playground (what the API records) and the status
-- its reconciler writes back. `generation` is bumped by every change of
-- desired state; `observed_generation` is the generation the reconciler
-- last converged.

ALTER TABLE playgrounds ADD COLUMN job_mode BIGINT NOT NULL DEFAULT 0;
ALTER TABLE playgrounds ADD COLUMN watched_services TEXT NOT NULL DEFAULT '[]';
ALTER TABLE playgrounds ADD COLUMN env_overrides TEXT NOT NULL DEFAULT '{}';
ALTER TABLE playgrounds ADD COLUMN service_subdomains TEXT NOT NULL DEFAULT '{}';
ALTER TABLE playgrounds ADD COLUMN service_settings TEXT NOT NULL DEFAULT '{}';
ALTER TABLE playgrounds ADD COLUMN compose_project TEXT NOT NULL DEFAULT '';
ALTER TABLE playgrounds ADD COLUMN desired_state TEXT NOT NULL DEFAULT 'running';
ALTER TABLE playgrounds ADD COLUMN generation BIGINT NOT NULL DEFAULT 1;
ALTER TABLE playgrounds ADD COLUMN observed_generation BIGINT NOT NULL DEFAULT 0;
ALTER TABLE playgrounds ADD COLUMN creation_step TEXT;
ALTER TABLE playgrounds ADD COLUMN error_message TEXT;
ALTER TABLE playgrounds ADD COLUMN error_step TEXT;
ALTER TABLE playgrounds ADD COLUMN needs_recreation BIGINT NOT NULL DEFAULT 0;
ALTER TABLE playgrounds ADD COLUMN services_status TEXT NOT NULL DEFAULT '[]';
ALTER TABLE playgrounds ADD COLUMN expires_at TEXT;
ALTER TABLE playgrounds ADD COLUMN last_applied_at TEXT;
CREATE INDEX playgrounds_account ON playgrounds (account_id, id);
