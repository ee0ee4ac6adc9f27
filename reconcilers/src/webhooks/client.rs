//! The one way play sends a request to a webhook receiver: every byte of
//! a delivery leaves through [`DeliveryClient::post`], so the SSRF rules
//! are enforced once.
//!
//! - The URL is checked again at send time ([`UrlPolicy::check`]: scheme,
//!   userinfo, IP literals), since the operator's policy may have changed
//!   since the endpoint was saved.
//! - A host name is resolved by [`CheckedResolver`], which refuses the
//!   name when **any** of its addresses is not allowed
//!   ([`UrlPolicy::check_resolved`]); the connection is made to the addresses it
//!   returned, so nothing resolves the name a second time (no DNS
//!   rebinding between check and connect). An IP literal is not resolved
//!   at all: `check` has already judged it.
//! - No proxy from the environment, no redirects (a 3xx is a failed
//!   attempt), one timeout over the whole exchange (connect, send, read),
//!   and at most `max_response_bytes` of the answer read.

use std::net::SocketAddr;
use std::sync::Arc;
use std::time::Duration;

use play_core::webhook::UrlPolicy;
use play_core::webhook::delivery::USER_AGENT;
use reqwest::dns::{Addrs, Name, Resolve, Resolving};

/// Why an address was refused: carried through reqwest's error chain.
#[derive(Debug, thiserror::Error)]
#[error("{0}")]
pub struct Refused(pub String);

/// The resolver of [`DeliveryClient`]: the system's (`getaddrinfo`, as
/// tokio does it), then [`UrlPolicy::check_resolved`].
#[derive(Debug)]
pub struct CheckedResolver {
    policy: Arc<UrlPolicy>,
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

/// How a receiver answered.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Answer {
    pub status: u16,
    /// The start of the body (lossy UTF-8), when there was one.
    pub snippet: Option<String>,
}

/// Why no answer came.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
pub enum SendError {
    /// The URL or an address it resolves to is not allowed: nothing sent.
    #[error("refused: {0}")]
    Refused(String),
    #[error("timed out after {0:?}")]
    Timeout(Duration),
    #[error("{0}")]
    Network(String),
}

/// Limits of [`DeliveryClient`].
#[derive(Clone, Copy, Debug)]
pub struct ClientLimits {
    pub timeout: Duration,
    pub max_response_bytes: usize,
    pub snippet_bytes: usize,
}

/// See the [module documentation](self).
#[derive(Clone, Debug)]
pub struct DeliveryClient {
    http: reqwest::Client,
    policy: Arc<UrlPolicy>,
    limits: ClientLimits,
}

impl DeliveryClient {
    pub fn new(policy: UrlPolicy, limits: ClientLimits) -> Result<Self, String> {
        let policy = Arc::new(policy);
        let http = reqwest::Client::builder()
            .dns_resolver(Arc::new(CheckedResolver { policy: policy.clone() }))
            .redirect(reqwest::redirect::Policy::none())
            .no_proxy()
            .https_only(!policy.allow_http)
            .timeout(limits.timeout)
            .connect_timeout(limits.timeout)
            .user_agent(USER_AGENT)
            .tcp_nodelay(true)
            .build()
            .map_err(|e| format!("cannot build the webhook HTTP client: {e}"))?;
        Ok(DeliveryClient { http, policy, limits })
    }

    /// POSTs `body` with `headers` to `url` and reads (a capped part of)
    /// the answer.
    pub async fn post(&self, url: &str, headers: &[(&str, String)], body: Vec<u8>) -> Result<Answer, SendError> {
        let url = self.policy.check(url).map_err(SendError::Refused)?;
        let mut request = self.http.post(url);
        for (name, value) in headers {
            request = request.header(*name, value);
        }
        let mut response = request.body(body).send().await.map_err(|e| self.classify(e))?;
        let status = response.status().as_u16();
        let mut read = 0usize;
        let mut kept = Vec::new();
        while read < self.limits.max_response_bytes {
            match response.chunk().await {
                Ok(Some(chunk)) => {
                    read += chunk.len();
                    let room = self.limits.snippet_bytes.saturating_sub(kept.len());
                    kept.extend_from_slice(&chunk[..chunk.len().min(room)]);
                }
                Ok(None) => break,
                // The status is what counts; a body cut short is not a failure.
                Err(e) if e.is_timeout() => return Err(SendError::Timeout(self.limits.timeout)),
                Err(_) => break,
            }
        }
        let snippet = (!kept.is_empty()).then(|| String::from_utf8_lossy(&kept).into_owned());
        Ok(Answer { status, snippet })
    }

    fn classify(&self, error: reqwest::Error) -> SendError {
        let mut source: Option<&(dyn std::error::Error + 'static)> = Some(&error);
        while let Some(e) = source {
            if let Some(refused) = e.downcast_ref::<Refused>() {
                return SendError::Refused(refused.0.clone());
            }
            source = e.source();
        }
        if error.is_timeout() {
            return SendError::Timeout(self.limits.timeout);
        }
        let mut message = error.to_string();
        let mut source = std::error::Error::source(&error);
        while let Some(e) = source {
            message = format!("{message}: {e}");
            source = e.source();
        }
        SendError::Network(message)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[tokio::test]
    async fn the_resolver_refuses_a_name_of_a_loopback_address_not_allowlisted() {
        let resolver = CheckedResolver { policy: Arc::new(UrlPolicy::default()) };
        let error = match resolver.resolve("localhost".parse().unwrap()).await {
            Ok(_) => panic!("localhost was resolved"),
            Err(e) => e.to_string(),
        };
        assert!(error.contains("loopback"), "{error}");
    }
}
