-- Playzones on ssh URLs (issue #52, item 2). The deploy key's private
-- half is sealed in `credentials` (as an https Playzone's token is); its
-- public half is kept to be shown (`ssh_public_key`), and the host key
-- the first contact saw is pinned (`ssh_host_key`, an OpenSSH public key
-- line) and checked at every later contact. A new URL forgets the pin.
ALTER TABLE playzones ADD COLUMN ssh_public_key TEXT;
ALTER TABLE playzones ADD COLUMN ssh_host_key TEXT;
ALTER TABLE playzones ADD COLUMN ssh_host_key_pinned_at TEXT;
