-- Hard restart: `restart_epoch` counts hard restarts asked for; host
-- objects carry the epoch they were made in (`dev.play.epoch`), so a pass
-- tears down every older one before provisioning afresh. `pulled_epoch` is
-- the last epoch whose images were re-pulled: images are pulled again once
-- per hard restart, and never by a rollout.
ALTER TABLE playgrounds ADD COLUMN restart_epoch BIGINT NOT NULL DEFAULT 0;
ALTER TABLE playgrounds ADD COLUMN pulled_epoch BIGINT NOT NULL DEFAULT 0;
