-- One random id per play installation (per database). Host objects carry it
-- (`dev.play.installation`) and Compose project names include a short form,
-- so two installations sharing a Docker engine never see, adopt or remove
-- each other's containers: Playground ids are only unique per database.
CREATE TABLE installation (
    singleton   INTEGER PRIMARY KEY CHECK (singleton = 1),
    uid         TEXT NOT NULL,
    created_at  TEXT NOT NULL
);
INSERT INTO installation (singleton, uid, created_at)
VALUES (1, lower(hex(randomblob(8))), strftime('%Y-%m-%dT%H:%M:%fZ', 'now'));
