-- Zero-downtime rollouts (issue #12, item 7).
--
-- failed_rollouts: service name -> the config hash whose zero-downtime
-- rollout failed (the new container never became healthy). The
-- reconciler does not try that hash again, and the old container keeps
-- serving, until a rollout or hard restart clears the map.
ALTER TABLE playgrounds ADD COLUMN failed_rollouts TEXT NOT NULL DEFAULT '{}';
-- The container (name:port) the route's config sends to when the edge last
-- applied it: a rollout waits for its new container to be live here
-- before draining the old one.
ALTER TABLE edge_routes ADD COLUMN upstream TEXT;
