-- The repository a Playspec's Compose file belongs to (issue #13, item 10):
-- its relative paths (./nginx.conf, ./db/init, secrets' file:) are read
-- from this Playzone at the Playground's pinned commit, also when no
-- service is built from it. NULL: the Compose file has no repository (or
-- names one through a service built from a Playzone).
ALTER TABLE playspecs ADD COLUMN playzone_id INTEGER;
