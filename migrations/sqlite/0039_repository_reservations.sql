-- repository_reservations: a repository name held while its host makes it
-- (issue #49, item 5). A create records the reservation in one short write
-- transaction, calls the host with no transaction open (a GitHub push of a
-- thousand files is a thousand requests), then turns the reservation into
-- the repository row in another. (installation, owner, name) is unique: a
-- second create of the name while one runs is refused. A reservation past
-- expires_at was left by a create that stopped (a crash): the next create
-- of the name takes it over.
CREATE TABLE repository_reservations (
    id               INTEGER PRIMARY KEY AUTOINCREMENT,
    account_id       INTEGER NOT NULL REFERENCES accounts (id) ON DELETE CASCADE,
    installation_id  INTEGER NOT NULL REFERENCES scm_installations (id) ON DELETE CASCADE,
    owner            TEXT NOT NULL,
    name             TEXT NOT NULL,
    expires_at       TEXT NOT NULL,
    UNIQUE (installation_id, owner, name)
);
CREATE INDEX repository_reservations_account ON repository_reservations (account_id);
