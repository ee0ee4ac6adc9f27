//! The HTTP client of the API: bearer auth, timeouts, and an error answer
//! turned into [`ApiError`] (`api_error`).
//!
//! Invariants: the token is sent only in the `Authorization` header of
//! requests to the context's URL and never appears in an error, a `Debug`
//! output or a log; every request but a streamed one has a total timeout.

use std::fmt;
use std::time::Duration;

use anyhow::Context as _;
use reqwest::{Method, RequestBuilder, Response};
use serde::de::DeserializeOwned;
use serde_json::Value;

pub use super::api_error::ApiError;
use super::context::Target;
use super::exit::Transport;

/// Bound on connecting to the server.
const CONNECT_TIMEOUT: Duration = Duration::from_secs(10);
/// Bound on one whole request (not on a streamed answer, see
/// [`Client::stream`]).
const REQUEST_TIMEOUT: Duration = Duration::from_secs(60);

/// A client of one server, with one token.
#[derive(Clone)]
pub struct Client {
    http: reqwest::Client,
    /// The server's root URL, without a trailing slash and without `/api`.
    base: String,
    token: String,
}

impl fmt::Debug for Client {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Client").field("base", &self.base).finish_non_exhaustive()
    }
}

/// The text of a transport error and its causes, without debug output.
fn transport_message(err: &reqwest::Error) -> String {
    if err.is_timeout() {
        return format!("the server did not answer within {}s", REQUEST_TIMEOUT.as_secs());
    }
    let mut parts: Vec<String> = Vec::new();
    let mut cause: Option<&dyn std::error::Error> = Some(err);
    while let Some(e) = cause {
        let text = e.to_string();
        if !parts.iter().any(|p| p.contains(&text)) {
            parts.push(text);
        }
        cause = e.source();
    }
    parts.join(": ")
}

impl Client {
    pub fn new(target: &Target) -> anyhow::Result<Client> {
        let http = reqwest::Client::builder()
            .connect_timeout(CONNECT_TIMEOUT)
            .user_agent(concat!("play-cli/", env!("CARGO_PKG_VERSION")))
            .build()
            .context("cannot set up the HTTP client")?;
        Ok(Client { http, base: target.url.trim_end_matches('/').to_owned(), token: target.token.clone() })
    }

    /// The server's URL, without a trailing slash.
    pub fn base(&self) -> &str {
        &self.base
    }

    /// A request to `path` (starting with `/api/`), authenticated.
    pub fn request(&self, method: Method, path: &str) -> RequestBuilder {
        self.http.request(method, format!("{}{path}", self.base)).bearer_auth(&self.token)
    }

    /// Sends `request` with the request timeout; a transport failure is
    /// [`Transport`].
    async fn send(&self, request: RequestBuilder) -> anyhow::Result<Response> {
        request.timeout(REQUEST_TIMEOUT).send().await.map_err(|e| {
            anyhow::Error::new(Transport(format!("cannot reach {}: {}", self.base, transport_message(&e))))
        })
    }

    /// Sends `request` without a total timeout (a stream that lasts);
    /// only connecting is bounded.
    pub async fn stream(&self, request: RequestBuilder) -> anyhow::Result<Response> {
        request.send().await.map_err(|e| {
            anyhow::Error::new(Transport(format!("cannot reach {}: {}", self.base, transport_message(&e))))
        })
    }

    /// The body of a successful answer as JSON (`null` when empty), or the
    /// API's error.
    pub async fn read(&self, response: Response) -> anyhow::Result<Value> {
        let status = response.status();
        let body = response.text().await.map_err(|e| {
            anyhow::Error::new(Transport(format!("reading the answer of {}: {}", self.base, transport_message(&e))))
        })?;
        if !status.is_success() {
            return Err(ApiError::from_body(status, &body).into());
        }
        if body.trim().is_empty() {
            return Ok(Value::Null);
        }
        serde_json::from_str(&body).map_err(|e| {
            anyhow::Error::new(Transport(format!("the server answered {status} with a body that is not JSON: {e}")))
        })
    }

    /// `method path` with an optional JSON body; the answer's JSON.
    pub async fn call(&self, method: Method, path: &str, body: Option<&Value>) -> anyhow::Result<Value> {
        let mut request = self.request(method, path);
        if let Some(body) = body {
            request = request.json(body);
        }
        let response = self.send(request).await?;
        self.read(response).await
    }

    pub async fn get(&self, path: &str) -> anyhow::Result<Value> {
        self.call(Method::GET, path, None).await
    }

    /// `GET path` read as `T`.
    pub async fn get_as<T: DeserializeOwned>(&self, path: &str) -> anyhow::Result<T> {
        let value = self.get(path).await?;
        serde_json::from_value(value).with_context(|| format!("unexpected answer to GET {path}"))
    }
}

/// Whether `err` is the API's answer with `status`.
pub fn is_status(err: &anyhow::Error, status: u16) -> bool {
    err.chain().any(|c| c.downcast_ref::<ApiError>().is_some_and(|a| a.status == status))
}

/// Percent-encodes a query value (RFC 3986 unreserved characters kept).
pub fn query_value(value: &str) -> String {
    let mut out = String::new();
    for byte in value.bytes() {
        if byte.is_ascii_alphanumeric() || b"-._~".contains(&byte) {
            out.push(byte as char);
        } else {
            out.push_str(&format!("%{byte:02X}"));
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn debug_output_never_shows_the_token() {
        let target = Target { url: "http://x/".into(), token: "play_secret_token".into(), context: None };
        let client = Client::new(&target).unwrap();
        let shown = format!("{client:?}");
        assert!(!shown.contains("secret"), "{shown}");
        assert!(shown.contains("\"http://x\""), "{shown}");
    }

    #[test]
    fn query_values_are_percent_encoded() {
        assert_eq!(query_value("git:infra/envs a&b"), "git%3Ainfra%2Fenvs%20a%26b");
        assert_eq!(query_value("Playspec"), "Playspec");
    }
}
