-- The operator's per-account switch of play's own Git host (issue #29):
-- with PLAY_GIT_HOST_ACCOUNTS=selected, only accounts with git_host = 1
-- (`play accounts git-host NAME on`) may create repositories there.
ALTER TABLE accounts ADD COLUMN git_host INTEGER NOT NULL DEFAULT 0;
