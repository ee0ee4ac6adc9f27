//! The HTTP client of the transport: play's one outbound client
//! (`play-outbound`: the policy-checked resolver, no proxy, no redirects,
//! `https_only` unless the policy allows `http`, a timeout on connect and
//! on every request), and what its failures mean for a repository call.

use std::sync::Arc;
use std::time::Duration;

use play_model::webhook::UrlPolicy;
use play_outbound::Failure;

use crate::error::Error;

/// `User-Agent` of every request; git servers log it.
const USER_AGENT: &str = concat!("play-git/", env!("CARGO_PKG_VERSION"));

/// The client every request of a gateway goes through. One per gateway,
/// so its connection pool is shared by the calls.
pub(crate) fn build(policy: Arc<UrlPolicy>, timeout: Duration) -> Result<reqwest::Client, String> {
    play_outbound::client(policy, timeout, USER_AGENT).map_err(|e| format!("cannot build the git HTTP client: {e}"))
}

/// What a failed request means for the caller. The message names the
/// host (the URL carries no credentials) and never a header.
pub(crate) fn classify(error: &reqwest::Error, timeout: Duration) -> Error {
    match play_outbound::classify(error) {
        Failure::Refused(message) | Failure::Builder(message) => Error::Refused(message),
        Failure::Timeout => Error::Timeout(format!("no answer from the repository within {timeout:?}")),
        Failure::Network(message) => Error::Unreachable(message),
    }
}
