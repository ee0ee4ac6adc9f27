//! The HTTP client of the transport, and the one place a repository host
//! name becomes addresses.
//!
//! - A host name is resolved by [`CheckedResolver`], which refuses the
//!   name when **any** of its addresses is not allowed by the operator's
//!   [`UrlPolicy`] ([`UrlPolicy::check_resolved`]); the connection is made to the
//!   addresses it returned, so nothing resolves the name a second time
//!   (no DNS rebinding between check and connect). An IP literal is never
//!   resolved: [`UrlPolicy::check`] judges it before the request is made.
//! - No proxy from the environment, no redirects (a 3xx is an error, see
//!   the transport), `https_only` unless the policy allows `http`, a
//!   timeout on connect and on every request.
//!
//! The same rules as the webhook dispatcher's client
//! (`play-reconcilers`, `webhooks/client.rs`); play-git cannot depend on
//! the reconcilers, hence this copy of the resolver.

use std::net::SocketAddr;
use std::sync::Arc;
use std::time::Duration;

use play_core::webhook::UrlPolicy;
use reqwest::dns::{Addrs, Name, Resolve, Resolving};

use crate::error::Error;

/// `User-Agent` of every request; git servers log it.
const USER_AGENT: &str = concat!("play-git/", env!("CARGO_PKG_VERSION"));

/// Why an address was refused: carried through reqwest's error chain and
/// recognised by [`classify`].
#[derive(Debug, thiserror::Error)]
#[error("{0}")]
pub(crate) struct Refused(pub String);

/// The system resolver (`getaddrinfo`, as tokio does it), then
/// [`UrlPolicy::check_resolved`].
#[derive(Debug)]
pub(crate) struct CheckedResolver {
    pub(crate) policy: Arc<UrlPolicy>,
}

impl Resolve for CheckedResolver {
    fn resolve(&self, name: Name) -> Resolving {
        let policy = self.policy.clone();
        Box::pin(async move {
            let host = name.as_str().to_owned();
            let addrs: Vec<SocketAddr> = tokio::net::lookup_host((host.as_str(), 0)).await?.collect();
            match policy.check_resolved(&host, addrs) {
                Ok(addrs) => Ok(Box::new(addrs.into_iter()) as Addrs),
                Err(message) => Err(Box::new(Refused(message)) as Box<dyn std::error::Error + Send + Sync>),
            }
        })
    }
}

/// The client every request of a gateway goes through (see the module
/// documentation). One per gateway, so its connection pool is shared by
/// the calls.
pub(crate) fn build(policy: Arc<UrlPolicy>, timeout: Duration) -> Result<reqwest::Client, String> {
    reqwest::Client::builder()
        .https_only(!policy.allow_http)
        .dns_resolver(Arc::new(CheckedResolver { policy }))
        .redirect(reqwest::redirect::Policy::none())
        .no_proxy()
        .timeout(timeout)
        .connect_timeout(timeout)
        .user_agent(USER_AGENT)
        .tcp_nodelay(true)
        .build()
        .map_err(|e| format!("cannot build the git HTTP client: {e}"))
}

/// What a failed request means for the caller. The message names the
/// host (the URL carries no credentials) and never a header.
pub(crate) fn classify(error: &reqwest::Error, timeout: Duration) -> Error {
    let mut source: Option<&(dyn std::error::Error + 'static)> = Some(error);
    while let Some(e) = source {
        if let Some(refused) = e.downcast_ref::<Refused>() {
            return Error::Refused(refused.0.clone());
        }
        source = e.source();
    }
    if error.is_timeout() {
        return Error::Timeout(format!("no answer from the repository within {timeout:?}"));
    }
    let mut message = error.to_string();
    let mut source = std::error::Error::source(error);
    while let Some(e) = source {
        message = format!("{message}: {e}");
        source = e.source();
    }
    if error.is_builder() {
        // https_only refusing an http URL, say.
        Error::Refused(message)
    } else {
        Error::Unreachable(message)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[tokio::test]
    async fn the_resolver_refuses_localhost_unless_allowlisted() {
        let resolver = CheckedResolver { policy: Arc::new(UrlPolicy::default()) };
        let error = match resolver.resolve("localhost".parse().unwrap()).await {
            Ok(_) => panic!("localhost was resolved"),
            Err(e) => e.to_string(),
        };
        assert!(error.contains("loopback"), "{error}");
    }
}
