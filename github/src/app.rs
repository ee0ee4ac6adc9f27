//! The operator's GitHub App and the JSON Web Token play signs to act as
//! it. GitHub's rules ("Generating a JSON Web Token (JWT) for a GitHub
//! App"): RS256 with the app's private key; `iss` the app's id (or its
//! client id); `iat` 60 seconds in the past, against clock drift; `exp` at
//! most 10 minutes after it.

use std::fmt;
use std::path::{Path, PathBuf};

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

/// The app as the operator gives it to `play serve` (`PLAY_GITHUB_*`):
/// its ids, the files holding its private key and OAuth client secret, and
/// GitHub's addresses. The five settings that make an app are given all or
/// none; errors name them as `play serve`'s flags.
#[derive(Clone, Debug, Default)]
pub struct AppSettings {
    pub app_id: Option<String>,
    pub slug: Option<String>,
    pub key_file: Option<PathBuf>,
    pub client_id: Option<String>,
    pub client_secret_file: Option<PathBuf>,
    pub api_url: String,
    pub web_url: String,
}

impl AppSettings {
    /// The app's configuration and key, read from their files; `None` when
    /// none of the five settings is given. Some but not all of them, or a
    /// file that cannot be read, is an error that names the setting.
    pub fn load(&self) -> std::result::Result<Option<(GithubAppConfig, AppKey)>, String> {
        let (Some(app_id), Some(slug), Some(key_file), Some(client_id), Some(secret_file)) =
            (&self.app_id, &self.slug, &self.key_file, &self.client_id, &self.client_secret_file)
        else {
            let any = self.app_id.is_some()
                || self.slug.is_some()
                || self.key_file.is_some()
                || self.client_id.is_some()
                || self.client_secret_file.is_some();
            if any {
                return Err("a GitHub App needs all of --github-app-id, --github-app-slug, --github-app-key-file, \
                            --github-client-id and --github-client-secret-file"
                    .into());
            }
            return Ok(None);
        };
        let in_key_file = |e: &dyn fmt::Display| format!("--github-app-key-file {}: {e}", key_file.display());
        let key =
            AppKey::from_pem(&std::fs::read(key_file).map_err(|e| in_key_file(&e))?).map_err(|e| in_key_file(&e))?;
        let secret = read_secret_file(secret_file)
            .map_err(|e| format!("--github-client-secret-file {}: {e}", secret_file.display()))?;
        let config = GithubAppConfig {
            app_id: app_id.clone(),
            slug: slug.clone(),
            api_url: self.api_url.clone(),
            web_url: self.web_url.clone(),
            client_id: client_id.clone(),
            client_secret: ClientSecret(secret),
        };
        Ok(Some((config, key)))
    }
}

/// A secret kept in a file of one line (`PLAY_GITHUB_CLIENT_SECRET_FILE`,
/// `PLAY_GITHUB_WEBHOOK_SECRET_FILE`): its text without the line break,
/// which is not part of it.
pub fn read_secret_file(path: &Path) -> std::io::Result<String> {
    Ok(std::fs::read_to_string(path)?.trim_end_matches(['\r', '\n']).to_owned())
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
