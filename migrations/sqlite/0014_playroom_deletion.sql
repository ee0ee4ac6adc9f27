-- A Playroom whose edge container may still run is deleted in two steps
-- (issue #12): DELETE hides it at once (deleted_at set, its name freed by
-- a suffix), and the edge reconciler removes the container from the host,
-- then the row. A Playroom that never ran an edge is deleted at once.
ALTER TABLE playrooms ADD COLUMN deleted_at TEXT;
