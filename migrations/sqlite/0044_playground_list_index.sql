-- The Playgrounds list (issue #52, item 7) counts an account's
-- Playgrounds that are not destroyed, with or without a status filter:
-- this index answers that count from the index alone, without reading
-- each row for its status.
CREATE INDEX playgrounds_account_status ON playgrounds (account_id, status, id);
