//! The `HostGateway` seam: live, read-only queries against a Playroom's Docker
//! host (connection tests, logs). Defined here, implemented in
//! `play-reconcilers`, injected into the API by the binary, so the API crate
//! never depends on russh or bollard.
