-- Who a provider's installation is on (issue #29): the user or
-- organisation login, which owns the repositories play creates through it
-- and names the repositories attach may find; `organisation` is 1 for an
-- organisation (GitHub lets an app create repositories only there).
-- Empty and 0 for play's own Git host, whose owner is the account's name.
ALTER TABLE scm_installations ADD COLUMN account_login TEXT NOT NULL DEFAULT '';
ALTER TABLE scm_installations ADD COLUMN organisation INTEGER NOT NULL DEFAULT 0;
