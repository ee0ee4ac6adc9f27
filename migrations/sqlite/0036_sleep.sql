-- Idle Playgrounds sleep, and the first request wakes them (issue #32).
--
-- sleep_after_secs: the Playground's own setting (NULL: its Playspec's,
--   then the operator's default; 0: never).
-- power: what the Playground should be, awake or asleep; power_reason and
--   power_changed_at say why and since when (idle, request, api).
-- running_since: when it last became running (the idle clock's floor).
-- slept_at: when it was last converged asleep.
-- last_active_at: the last activity its edge saw (requests through its
--   routes, connections still open), a max written by the edge's monitor.
ALTER TABLE playgrounds ADD COLUMN sleep_after_secs INTEGER;
ALTER TABLE playgrounds ADD COLUMN power TEXT NOT NULL DEFAULT 'awake';
ALTER TABLE playgrounds ADD COLUMN power_reason TEXT;
ALTER TABLE playgrounds ADD COLUMN power_changed_at TEXT;
ALTER TABLE playgrounds ADD COLUMN running_since TEXT;
ALTER TABLE playgrounds ADD COLUMN slept_at TEXT;
ALTER TABLE playgrounds ADD COLUMN last_active_at TEXT;
-- The default of the Playspec's Playgrounds (NULL: the operator's; 0: never).
ALTER TABLE playspecs ADD COLUMN sleep_after_secs INTEGER;
