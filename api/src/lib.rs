//! play's REST API: the axum router, authentication and scopes, the error
//! envelope and the OpenAPI document; and the MCP server at `/mcp`, whose
//! tools are the same routes.
//!
//! Handlers validate input and record desired state in the store (with an
//! outbox event, in one transaction), then return. They never call Docker or
//! SSH: reconcilers converge the hosts, and live host reads go through the
//! `HostGateway` trait from `play-core`.

pub mod auth;
pub mod compression;
pub mod error;
pub mod extract;
pub mod input;
pub mod key_cache;
pub mod mcp;
pub mod openapi;
pub mod principal;
pub mod recent;
pub mod rendered;
pub mod route_cache;
pub mod route_scopes;
pub mod router;
pub mod routes;
pub mod session;
pub mod state;
#[cfg(feature = "testing")]
pub mod testing;
pub mod views;
pub mod web;

pub use error::{ApiError, ApiResult};
// Server-side apply and the CPU pool are `play-core`'s; kept at these
// paths for the handlers, MCP and the tests.
pub use play_core::{apply, cpu};
pub use router::router;
pub use state::{ApiConfig, AppState};
