-- Each replica's last sign of life (issue #33, item 5): a replica writes
-- seen_at every quarter of the lease duration. A survivor that finds one
-- silent for a lease duration wakes every Playground whose desired state
-- changed and has not converged: changes the silent replica accepted but
-- had not started (or finished) are attended within seconds, not at the
-- next resync. The row is deleted by the survivor that handles it.
CREATE TABLE replica_heartbeats (
    replica TEXT PRIMARY KEY,
    seen_at TEXT NOT NULL
);
