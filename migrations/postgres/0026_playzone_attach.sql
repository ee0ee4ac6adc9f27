-- Attach (issue #29): a Playzone made by POST /api/playzones/attach reads
-- its repository through the account's installation, not a token.
-- repository_id names it; there is no foreign key on purpose: a removed
-- repository or installation must leave the Playzone's reference behind,
-- so its sync can say that access was lost instead of silently turning
-- into an anonymous clone of scm_url.
ALTER TABLE playzones ADD COLUMN repository_id BIGINT;

-- One Playzone per account and repository: a second attach (or two at
-- once) gets the existing one.
CREATE UNIQUE INDEX playzones_account_repository ON playzones (account_id, repository_id);
