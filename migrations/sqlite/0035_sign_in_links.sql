-- One-time sign-in links (issue #31): `play login --web` (and `play serve`
-- on its first start, on a terminal) prints a link that opens a browser
-- session for the key that asked for it. Used once, within minutes; only
-- an HMAC of its secret under the token pepper is kept; it goes with its
-- key.
CREATE TABLE sign_in_links (
    id            INTEGER PRIMARY KEY AUTOINCREMENT,
    secret_hash   TEXT NOT NULL UNIQUE,
    key_id        INTEGER NOT NULL REFERENCES api_keys (id) ON DELETE CASCADE,
    account_id    INTEGER NOT NULL REFERENCES accounts (id) ON DELETE CASCADE,
    created_at    TEXT NOT NULL,
    expires_at    TEXT NOT NULL
);
CREATE INDEX sign_in_links_expires ON sign_in_links (expires_at);
