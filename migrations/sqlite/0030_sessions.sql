-- Browser sessions (issue #31; the GitHub install flow of issue #29 is
-- bound to one). A session acts with exactly its API key's account and
-- scopes; it ends with the key (the cascade, and every lookup joins the
-- key). Only an HMAC of the session id under the token pepper is kept.
CREATE TABLE sessions (
    id            INTEGER PRIMARY KEY AUTOINCREMENT,
    secret_hash   TEXT NOT NULL UNIQUE,
    key_id        INTEGER NOT NULL REFERENCES api_keys (id) ON DELETE CASCADE,
    account_id    INTEGER NOT NULL REFERENCES accounts (id) ON DELETE CASCADE,
    created_at    TEXT NOT NULL,
    last_seen_at  TEXT NOT NULL,
    expires_at    TEXT NOT NULL
);
CREATE INDEX sessions_key ON sessions (key_id);
CREATE INDEX sessions_expires ON sessions (expires_at);

-- The session an install flow was started from, if it was: the setup
-- redirect is then accepted only with that session's cookie.
ALTER TABLE scm_install_states ADD COLUMN session_id INTEGER;
