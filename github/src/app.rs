//! The operator's GitHub App and the JSON Web Token play signs to act as
//! it. GitHub's rules ("Generating a JSON Web Token (JWT) for a GitHub
//! App"): RS256 with the app's private key; `iss` the app's id (or its
//! client id); `iat` 60 seconds in the past, against clock drift; `exp` at
//! most 10 minutes after it.

use std::fmt;

use chrono::{DateTime, Utc};
use jsonwebtoken::{Algorithm, EncodingKey, Header};
use serde::Serialize;

use crate::{GithubError, Result};

/// How far back `iat` is set, in seconds (GitHub's advice).
pub const ISSUED_BEFORE_SECS: i64 = 60;

/// How long a JWT lives after its `iat`, in seconds: 9 minutes, under
/// GitHub's 10-minute limit with a minute to spare for clock drift.
pub const LIFETIME_SECS: i64 = 9 * 60;

/// The operator's app settings (`PLAY_GITHUB_*`, `docs/repositories.md`).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct GithubAppConfig {
    /// The app's id (or client id): the JWT's `iss`.
    pub app_id: String,
    /// The app's URL name: the install page is
    /// `{web_url}/apps/{slug}/installations/new`.
    pub slug: String,
    /// The REST API's base URL, without a trailing slash:
    /// `https://api.github.com`, or GitHub Enterprise Server's
    /// `https://HOST/api/v3`.
    pub api_url: String,
    /// The web base URL: `https://github.com` or the GHES host.
    pub web_url: String,
    /// The app's OAuth client id and secret: the setup redirect's `code`
    /// is exchanged with them for the person's token, which shows the
    /// installations that person can see.
    pub client_id: String,
    pub client_secret: ClientSecret,
}

/// The app's OAuth client secret; its `Debug` shows nothing of it.
#[derive(Clone, PartialEq, Eq)]
pub struct ClientSecret(pub String);

impl fmt::Debug for ClientSecret {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("ClientSecret([redacted])")
    }
}

impl GithubAppConfig {
    /// The page an account owner visits to install the app, carrying
    /// play's `state` back to the setup URL.
    pub fn install_url(&self, state: &str) -> String {
        format!("{}/apps/{}/installations/new?state={state}", self.web_url, self.slug)
    }
}

/// The app's private key, parsed once at start-up. Its `Debug` shows
/// nothing of the key.
#[derive(Clone)]
pub struct AppKey(EncodingKey);

impl fmt::Debug for AppKey {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("AppKey([redacted])")
    }
}

#[derive(Serialize)]
struct Claims<'a> {
    iat: i64,
    exp: i64,
    iss: &'a str,
}

impl AppKey {
    /// Reads the PEM GitHub hands out (PKCS#1, `BEGIN RSA PRIVATE KEY`) or
    /// its PKCS#8 form. The error never quotes the file.
    pub fn from_pem(pem: &[u8]) -> Result<Self> {
        EncodingKey::from_rsa_pem(pem)
            .map(AppKey)
            .map_err(|e| GithubError::Key(format!("not an RSA private key in PEM form ({e})")))
    }

    /// A JWT for `app_id`, valid from a minute before `now` for
    /// [`LIFETIME_SECS`].
    pub fn jwt(&self, app_id: &str, now: DateTime<Utc>) -> Result<String> {
        let iat = now.timestamp() - ISSUED_BEFORE_SECS;
        let claims = Claims { iat, exp: iat + LIFETIME_SECS, iss: app_id };
        jsonwebtoken::encode(&Header::new(Algorithm::RS256), &claims, &self.0)
            .map_err(|e| GithubError::Key(format!("signing the app JWT failed ({e})")))
    }
}
