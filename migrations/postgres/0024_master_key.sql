-- The fingerprint of the master key this database's secrets and tokens
-- were made with (issue #16): a replica started with another key file
-- refuses to start instead of minting tokens no other replica accepts and
-- failing to open every stored secret. One row; a one-way derivation of
-- the key (HMAC under its own label), which says nothing about the key.
CREATE TABLE master_key (
    id           INTEGER PRIMARY KEY CHECK (id = 1),
    fingerprint  TEXT NOT NULL,
    recorded_at  TEXT NOT NULL
);
