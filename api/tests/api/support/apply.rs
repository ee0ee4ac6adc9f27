//! Server-side apply's shared setup: a Compose file, how a manifest object
//! is written, and the call to `POST /api/apply` (used by `apply.rs` and
//! `apply_concurrency.rs`).

use play_api::testing::{Response, TestApp};
use serde_json::{Value, json};

/// Two services, `web` and `db`.
pub const COMPOSE: &str = "services:\n  web:\n    image: play-test/busybox:1\n  db:\n    image: play-test/busybox:1\n";

/// A manifest object of `kind` named `name`.
pub fn object(kind: &str, name: &str, spec: Value) -> Value {
    json!({"apiVersion": "play/v1", "kind": kind, "metadata": {"name": name}, "spec": spec})
}

/// `POST /api/apply` with `body`, as a dry run when `dry_run`.
pub async fn apply(app: &TestApp, token: &str, body: Value, dry_run: bool) -> Response {
    let path = if dry_run { "/api/apply?dry_run=true" } else { "/api/apply" };
    app.post(path, token, body).await
}
