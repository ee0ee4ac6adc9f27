-- A counter every API key deletion bumps, in the deleting transaction
-- (issue #16): each API replica caches verified keys in memory and reads
-- this one row at most every 250 ms; a change drops its cache, so a
-- revoked key stops working everywhere within a second.
CREATE TABLE api_key_revocations (
    id          INTEGER PRIMARY KEY CHECK (id = 1),
    generation  BIGINT NOT NULL
);
INSERT INTO api_key_revocations (id, generation) VALUES (1, 0);
