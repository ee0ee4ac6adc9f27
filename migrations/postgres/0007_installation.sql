-- One random id per play installation (per database). Host objects carry it
-- (`dev.play.installation`) and Compose project names include a short form,
-- so two installations sharing a Docker engine never see, adopt or remove
-- each other's containers: Playground ids are only unique per database.
CREATE TABLE installation (
    singleton   BIGINT PRIMARY KEY CHECK (singleton = 1),
    uid         TEXT NOT NULL,
    created_at  TEXT NOT NULL
);
INSERT INTO installation (singleton, uid, created_at)
VALUES (1, substr(md5(random()::text || clock_timestamp()::text), 1, 16),
        to_char(now() AT TIME ZONE 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS.MS"Z"'));
