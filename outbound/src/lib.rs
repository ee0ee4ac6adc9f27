//! The one way play sends a request to an address a tenant or an operator
//! named (a repository host, a webhook receiver, a provider's API): the
//! SSRF rules are written once, here, and every outbound client is built
//! by [`client`].
//!
//! - A host name is resolved by [`CheckedResolver`], which refuses the
//!   name when **any** of its addresses is not allowed by the operator's
//!   [`UrlPolicy`] ([`UrlPolicy::check_resolved`]); the connection is made
//!   to the addresses it returned, so nothing resolves the name a second
//!   time (no DNS rebinding between check and connect). An IP literal is
//!   never resolved: the caller judges the URL with [`UrlPolicy::check`]
//!   before the request is made.
//! - No proxy from the environment, no redirects (a 3xx is the caller's
//!   failure to report), `https_only` unless the policy allows `http`, and
//!   one timeout on connect and on the whole exchange.
//!
//! A failed request is read back with [`classify`], which finds the
//! resolver's refusal in reqwest's error chain.

use std::net::SocketAddr;
use std::sync::Arc;
use std::time::Duration;

pub use play_model::webhook::UrlPolicy;
use reqwest::dns::{Addrs, Name, Resolve, Resolving};

/// Why an address was refused: carried through reqwest's error chain and
/// recognised by [`classify`].
#[derive(Debug, thiserror::Error)]
#[error("{0}")]
pub struct Refused(pub String);

/// The system resolver (`getaddrinfo`, as tokio does it), then
/// [`UrlPolicy::check_resolved`] over every address it returned.
#[derive(Debug)]
pub struct CheckedResolver {
    policy: Arc<UrlPolicy>,
}

impl CheckedResolver {
    pub fn new(policy: Arc<UrlPolicy>) -> Self {
        CheckedResolver { policy }
    }
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

/// An outbound client under `policy` (see the [module documentation](self)).
/// Build one per user of it and keep it, so its connection pool is shared
/// by the calls.
pub fn client(policy: Arc<UrlPolicy>, timeout: Duration, user_agent: &'static str) -> reqwest::Result<reqwest::Client> {
    reqwest::Client::builder()
        .https_only(!policy.allow_http)
        .dns_resolver(Arc::new(CheckedResolver::new(policy)))
        .redirect(reqwest::redirect::Policy::none())
        .no_proxy()
        .timeout(timeout)
        .connect_timeout(timeout)
        .user_agent(user_agent)
        .tcp_nodelay(true)
        .build()
}

/// What a failed request of a [`client`] means.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Failure {
    /// The resolver refused an address: nothing was sent.
    Refused(String),
    /// The timeout passed.
    Timeout,
    /// The request could not be built (`https_only` refusing an `http`
    /// URL, say): nothing was sent. The message with its causes.
    Builder(String),
    /// Anything else on the way (connect, TLS, reading): the message with
    /// its causes. It names the host, never a header.
    Network(String),
}

/// Reads a failed request back (see [`Failure`]).
pub fn classify(error: &reqwest::Error) -> Failure {
    let mut source: Option<&(dyn std::error::Error + 'static)> = Some(error);
    while let Some(e) = source {
        if let Some(refused) = e.downcast_ref::<Refused>() {
            return Failure::Refused(refused.0.clone());
        }
        source = e.source();
    }
    if error.is_timeout() {
        return Failure::Timeout;
    }
    let mut message = error.to_string();
    let mut source = std::error::Error::source(error);
    while let Some(e) = source {
        message = format!("{message}: {e}");
        source = e.source();
    }
    if error.is_builder() { Failure::Builder(message) } else { Failure::Network(message) }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[tokio::test]
    async fn the_resolver_refuses_a_name_of_a_loopback_address_not_allowlisted() {
        let resolver = CheckedResolver::new(Arc::new(UrlPolicy::default()));
        let error = match resolver.resolve("localhost".parse().unwrap()).await {
            Ok(_) => panic!("localhost was resolved"),
            Err(e) => e.to_string(),
        };
        assert!(error.contains("loopback"), "{error}");
    }

    #[tokio::test]
    async fn a_refused_address_is_found_in_the_error_chain() {
        let http =
            client(Arc::new(UrlPolicy { allow_http: true, ..UrlPolicy::default() }), Duration::from_secs(5), "t")
                .unwrap();
        let error = http.get("http://localhost:9/").send().await.unwrap_err();
        assert!(matches!(classify(&error), Failure::Refused(m) if m.contains("loopback")), "{error:?}");
    }
}
