-- Source hosting (issue #29).
--
-- scm_installations: a source-hosting app installed on an account. provider
-- 'builtin' is play's own Git host (external_id empty: one per account);
-- a GitHub App installation will carry its installation id.
CREATE TABLE scm_installations (
    id           INTEGER PRIMARY KEY AUTOINCREMENT,
    account_id   INTEGER NOT NULL REFERENCES accounts (id) ON DELETE CASCADE,
    provider     TEXT NOT NULL,
    external_id  TEXT NOT NULL DEFAULT '',
    created_at   TEXT NOT NULL,
    UNIQUE (account_id, provider, external_id)
);

-- repositories: a repository an account created or connected through an
-- installation. (installation, owner, name) is unique: two creates of one
-- name race on this index, and the loser is refused.
CREATE TABLE repositories (
    id               INTEGER PRIMARY KEY AUTOINCREMENT,
    account_id       INTEGER NOT NULL REFERENCES accounts (id) ON DELETE CASCADE,
    installation_id  INTEGER NOT NULL REFERENCES scm_installations (id) ON DELETE CASCADE,
    owner            TEXT NOT NULL,
    name             TEXT NOT NULL,
    description      TEXT NOT NULL DEFAULT '',
    private          INTEGER NOT NULL DEFAULT 1,
    default_branch   TEXT NOT NULL,
    created_at       TEXT NOT NULL,
    updated_at       TEXT NOT NULL,
    UNIQUE (installation_id, owner, name)
);
CREATE INDEX repositories_account ON repositories (account_id);

-- repository_pushes: every push play made or received (API or git push):
-- the branch, its head before (NULL: created) and after.
CREATE TABLE repository_pushes (
    id             INTEGER PRIMARY KEY AUTOINCREMENT,
    repository_id  INTEGER NOT NULL REFERENCES repositories (id) ON DELETE CASCADE,
    branch         TEXT NOT NULL,
    old_sha        TEXT,
    new_sha        TEXT NOT NULL,
    pushed_at      TEXT NOT NULL
);
CREATE INDEX repository_pushes_repository ON repository_pushes (repository_id, id);

-- A push wakes the Playzones on its repository, of any account.
CREATE INDEX playzones_scm_url ON playzones (scm_url);
