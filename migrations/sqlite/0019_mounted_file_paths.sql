-- Mounted files as files of the Compose project (issue #13, item 10).
--
-- path: the file's path in the Compose project, normalised (`nginx/nginx.conf`
-- for `./nginx/nginx.conf`; no `.` or empty segments, never `..`, never
-- absolute), given at upload; NULL for a file that is only mounted at its
-- mount_path. A relative source of the Playspec's Compose (a bind, a
-- secret's or config's `file:`) resolves against these paths. Unique per
-- Playspec (NULLs apart), so a path names at most one file.
ALTER TABLE playspec_mounted_files ADD COLUMN path TEXT;
CREATE UNIQUE INDEX playspec_mounted_files_path ON playspec_mounted_files (playspec_id, path);
