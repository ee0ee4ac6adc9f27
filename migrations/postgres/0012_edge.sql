-- The edge (issue #12): one Caddy container per Playroom routes its
-- Playgrounds' exposed services.
--
-- `edge` holds the Playroom's edge settings as JSON (enabled, http_port,
-- https_port, tls); absent keys take their defaults (see
-- play_core::edge::settings), so '{}' is "on, ports 80/443, tls auto".
ALTER TABLE playrooms ADD COLUMN edge TEXT NOT NULL DEFAULT '{}';

-- What the edge reconciler last did on a Playroom's engine.
CREATE TABLE playroom_edges (
    playroom_id BIGINT PRIMARY KEY,
    -- SHA-256 of the Caddy config the edge last accepted; NULL before.
    config_hash TEXT,
    applied_at TEXT,
    -- The id of the edge container play last saw running.
    container_id TEXT,
    -- Why the last pass could not converge (Caddy's refusal, a port in use);
    -- NULL once a pass converges.
    error TEXT,
    error_at TEXT,
    updated_at TEXT NOT NULL
);

-- Host names claimed by Playgrounds' exposed services on a Playroom. The
-- oldest claim of a host wins it (claimed_at, then the Playground id);
-- other Playgrounds' routes for that host are held back and say why.
-- `live` is whether the route is in the config the edge last accepted.
CREATE TABLE edge_routes (
    playground_id BIGINT NOT NULL,
    service TEXT NOT NULL,
    playroom_id BIGINT NOT NULL,
    host TEXT NOT NULL,
    claimed_at TEXT NOT NULL,
    live BIGINT NOT NULL DEFAULT 0,
    -- The Playground holding the host when this route lost it.
    conflict_with BIGINT,
    PRIMARY KEY (playground_id, service)
);
CREATE INDEX edge_routes_playroom ON edge_routes (playroom_id, host);
