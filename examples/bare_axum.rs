//! The baseline for `scripts/bench-api`: a bare axum route on the same
//! runtime settings, so play's numbers can be read as a ratio to what the
//! machine does with no auth, no store and no middleware.

use axum::Json;
use axum::routing::get;

#[tokio::main]
async fn main() -> std::io::Result<()> {
    let address = std::env::args().nth(1).unwrap_or_else(|| "127.0.0.1:18090".into());
    let app = axum::Router::new().route("/", get(|| async { Json(serde_json::json!([])) }));
    let listener = tokio::net::TcpListener::bind(&address).await?;
    axum::serve(listener, app).await
}
