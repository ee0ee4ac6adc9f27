-- The GitHub App provider (issue #29).
--
-- scm_installations.status: what the provider last said of the
-- installation ('active', 'suspended', 'removed'). A removed installation
-- keeps its row, so Playzones attached through it say why they stopped.
ALTER TABLE scm_installations ADD COLUMN status TEXT NOT NULL DEFAULT 'active';

-- A provider's installation belongs to one play account: a second claim
-- of the same installation id is refused by this index.
CREATE UNIQUE INDEX scm_installations_external ON scm_installations (provider, external_id)
    WHERE external_id <> '';

-- scm_deliveries: every webhook delivery received from a provider, by the
-- provider's delivery id (GitHub: X-GitHub-Delivery). A redelivery finds
-- its row and changes nothing.
CREATE TABLE scm_deliveries (
    provider     TEXT NOT NULL,
    delivery_id  TEXT NOT NULL,
    event        TEXT NOT NULL,
    received_at  TEXT NOT NULL,
    PRIMARY KEY (provider, delivery_id)
);
-- Rows older than the retention (store::scm_deliveries) are deleted as new
-- deliveries arrive.
CREATE INDEX scm_deliveries_received ON scm_deliveries (received_at);

-- scm_install_states: the `state` of an install flow (the provider sends
-- the person back with it): bound to the account that started it, single
-- use (deleted when used), expiring. Only its SHA-256 is kept.
CREATE TABLE scm_install_states (
    state_hash  TEXT PRIMARY KEY,
    account_id  BIGINT NOT NULL REFERENCES accounts (id) ON DELETE CASCADE,
    provider    TEXT NOT NULL,
    expires_at  TEXT NOT NULL
);
