-- playgrounds.agent: the AI agent provider `POST /api/launch` was asked to
-- attach (the contract's `agent`, issue #52 item 4): recorded and shown,
-- NULL when none was named. play runs no agent itself (docs/decisions/api.md).
ALTER TABLE playgrounds ADD COLUMN agent TEXT;
