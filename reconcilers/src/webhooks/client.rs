//! The one way play sends a request to a webhook receiver: every byte of
//! a delivery leaves through [`DeliveryClient::post`], so the SSRF rules
//! are enforced once.
//!
//! - The URL is checked again at send time ([`UrlPolicy::check`]: scheme,
//!   userinfo, IP literals), since the operator's policy may have changed
//!   since the endpoint was saved.
//! - The client is play's one outbound client (`play-outbound`): a host
//!   name is resolved by its `CheckedResolver`, which refuses the name
//!   when **any** of its addresses is not allowed
//!   ([`UrlPolicy::check_resolved`]), and the connection is made to the
//!   addresses it returned (no DNS rebinding between check and connect).
//! - No proxy from the environment, no redirects (a 3xx is a failed
//!   attempt), one timeout over the whole exchange (connect, send, read),
//!   and at most `max_response_bytes` of the answer read.

use std::sync::Arc;
use std::time::Duration;

use play_model::webhook::UrlPolicy;
use play_model::webhook::delivery::USER_AGENT;
use play_outbound::Failure;

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
        let http = play_outbound::client(policy.clone(), limits.timeout, USER_AGENT)
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
        match play_outbound::classify(&error) {
            Failure::Refused(message) => SendError::Refused(message),
            Failure::Timeout => SendError::Timeout(self.limits.timeout),
            Failure::Builder(message) | Failure::Network(message) => SendError::Network(message),
        }
    }
}
