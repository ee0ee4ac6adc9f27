//! Playzones: git repositories that supply code to dynamic services.
//!
//! The rules live here, not in the handlers or the store: [`Changes`] is a
//! create or update request checked field by field
//! ([`Changes::validate`]); [`branch_name`] and [`repo_path`] are the shapes
//! play accepts for names it passes to git; [`env_file`] parses the env
//! files `env_defaults` reads. The sync loop is
//! `play_reconcilers::playzone`; the bytes of a repository cross
//! [`crate::repository::RepositoryGateway`].
//!
//! # Credentials
//!
//! `credentials` (an access token, or for an ssh URL a deploy key:
//! [`ssh`]) is write-only: sealed in the store,
//! opened only to build a [`RepositoryAccess`](crate::repository::RepositoryAccess)
//! for one gateway call. No type here that is serialised or shown holds it.

pub mod env_file;
pub mod model;
pub mod ssh;

use serde::Serialize;

use crate::FieldErrors;
use crate::error::push_field_error;
use crate::webhook::UrlPolicy;

/// Compose files sync looks for at the default branch's root, in this
/// order (Docker Compose's own order of preference).
pub const COMPOSE_FILES: [&str; 4] = ["compose.yaml", "compose.yml", "docker-compose.yml", "docker-compose.yaml"];
/// The env file `env_defaults` reads when none is named.
pub const DEFAULT_ENV_FILE: &str = ".env.example";
/// The largest env file `env_defaults` reads, in bytes.
pub const MAX_ENV_FILE_BYTES: usize = 64 * 1024;
/// The largest Compose file sync reads, in bytes.
pub const MAX_COMPOSE_FILE_BYTES: usize = 1024 * 1024;
/// `branches`' `limit`: default and maximum (spec Limits).
pub const DEFAULT_BRANCH_LIMIT: i64 = 20;
pub const MAX_BRANCH_LIMIT: i64 = 50;
/// Longest `branches` `query`, in characters.
pub const MAX_BRANCH_QUERY_CHARS: usize = 255;
/// Longest access token accepted, in characters.
pub const MAX_CREDENTIALS_CHARS: usize = 1024;
/// Longest branch name accepted, in bytes.
pub const MAX_BRANCH_BYTES: usize = 255;
/// Longest repository path (env file, Dockerfile), in bytes.
pub const MAX_PATH_BYTES: usize = 255;

/// Where a Playzone stands. Stored as its `as_str`.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Status {
    /// Not synced since it was created or its URL, token or default branch
    /// changed.
    Pending,
    /// The last sync succeeded.
    Active,
    /// The last sync failed; `status_message` says why. What an earlier
    /// sync recorded is kept.
    Error,
}

impl Status {
    pub const ALL: [Status; 3] = [Status::Pending, Status::Active, Status::Error];

    pub const fn as_str(self) -> &'static str {
        match self {
            Status::Pending => "pending",
            Status::Active => "active",
            Status::Error => "error",
        }
    }

    pub fn parse(text: &str) -> Option<Status> {
        Status::ALL.into_iter().find(|s| s.as_str() == text)
    }
}

/// The operator's rules for repository URLs: the same classifier as
/// webhook targets, with its own settings (`PLAY_REPOSITORY_ALLOW_HTTP`,
/// `PLAY_REPOSITORY_ALLOWLIST`).
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct RepositoryPolicy {
    pub urls: UrlPolicy,
}

impl RepositoryPolicy {
    /// Checks a repository URL from its text alone (the gateway checks the
    /// resolved addresses again at every connection).
    pub fn check(&self, text: &str) -> Result<url::Url, String> {
        let lower = text.get(..8).unwrap_or(text).to_ascii_lowercase();
        if lower.starts_with("http://") && !self.urls.allow_http {
            return Err("must use https (http is refused unless the operator sets PLAY_REPOSITORY_ALLOW_HTTP)".into());
        }
        if crate::repository::ssh::is_ssh_url(text) {
            return Err("must be an https URL: a repository on an ssh URL is read with a deploy key, so it needs a \
                        Playzone of its own (POST /api/playzones with the ssh URL, then generate_ssh_key)"
                .into());
        }
        let url = UrlPolicy { allow_http: true, ..self.urls.clone() }.check(text)?;
        if url.query().is_some() {
            return Err("must not contain a query (?...)".into());
        }
        Ok(url)
    }
}

impl RepositoryPolicy {
    /// Checks a Playzone's `scm_url`: an https URL as [`Self::check`]
    /// says, or an ssh URL (`ssh://git@host/owner/repo.git`,
    /// `git@host:owner/repo.git`) whose form [`SshUrl`](crate::repository::ssh::SshUrl)
    /// reads and whose host the same address rules allow.
    pub fn check_playzone_url(&self, text: &str) -> Result<(), String> {
        if !crate::repository::ssh::is_ssh_url(text) {
            return self.check(text).map(drop);
        }
        let url = crate::repository::ssh::SshUrl::parse(text)?;
        UrlPolicy { allow_http: true, ..self.urls.clone() }
            .check(&url.policy_probe())
            .map(drop)
            .map_err(|e| format!("the host {} {e}", url.host))
    }
}

/// The fields of a create or update request, as sent. On update every
/// field is optional; on create `name` and `scm_url` are required.
/// `default_branch: Some(None)` (JSON `null` on update) lets sync follow
/// the remote's default branch again.
#[derive(Clone, Debug, Default)]
pub struct Input {
    pub name: Option<String>,
    pub scm_url: Option<String>,
    pub default_branch: Option<Option<String>>,
    pub private: Option<bool>,
    /// `Some("")` on update removes the token.
    pub credentials: Option<String>,
    /// For an ssh URL: the host key to pin (an OpenSSH public key line, a
    /// `known_hosts` line or a `SHA256:` fingerprint); `Some("")` forgets
    /// the pin, and the next contact pins what it sees.
    pub ssh_host_key: Option<String>,
}

/// What an attach makes (`store::playzone_access::attach_in`): the
/// Playzone's name, the repository's clone URL, and the branch it builds
/// from (`None`: the repository's default).
#[derive(Clone, Copy, Debug)]
pub struct Attach<'a> {
    pub name: &'a str,
    pub scm_url: &'a str,
    pub default_branch: Option<&'a str>,
}

/// Validated changes; `None` leaves a field as it is.
#[derive(Clone, Default, PartialEq, Eq)]
pub struct Changes {
    pub name: Option<String>,
    /// Normalised: without a trailing slash.
    pub scm_url: Option<String>,
    pub default_branch: Option<Option<String>>,
    pub private: Option<bool>,
    /// `Some(None)` removes the token.
    pub credentials: Option<Option<String>>,
    /// `Some(None)` forgets the pinned host key; `Some(Some(pin))` pins
    /// it (normalised: a key line without comment, or a fingerprint).
    pub ssh_host_key: Option<Option<String>>,
}

impl std::fmt::Debug for Changes {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Changes")
            .field("name", &self.name)
            .field("scm_url", &self.scm_url)
            .field("default_branch", &self.default_branch)
            .field("private", &self.private)
            .field("credentials", &self.credentials.as_ref().map(|c| c.as_ref().map(|_| "<redacted>")))
            .field("ssh_host_key", &self.ssh_host_key)
            .finish()
    }
}

impl Changes {
    /// Whether these changes ask for a new sync (what the remote says may
    /// differ now).
    pub fn needs_sync(&self) -> bool {
        self.scm_url.is_some()
            || self.default_branch.is_some()
            || self.credentials.is_some()
            || self.ssh_host_key.is_some()
    }
}

/// What [`Changes::validate`] needs to know of a stored Playzone.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Stored<'a> {
    pub private: bool,
    pub has_token: bool,
    /// Attached to a repository through a source-hosting installation:
    /// its `scm_url` is the repository's, and never changes.
    pub attached: bool,
    /// The stored URL: a token is only ever sent to the origin it was
    /// given for (see [`Changes::validate`]).
    pub scm_url: &'a str,
}

/// Whether two repository URLs name the same origin (scheme, host and
/// port, as the transport connects): a stored token may follow a change of
/// path, never of origin. Text that does not parse has no origin, so it
/// never matches.
pub fn same_origin(a: &str, b: &str) -> bool {
    use crate::repository::ssh::{SshUrl, is_ssh_url};
    if is_ssh_url(a) || is_ssh_url(b) {
        // A deploy key stays with the host and port it was given for.
        return match (SshUrl::parse(a), SshUrl::parse(b)) {
            (Ok(a), Ok(b)) => a.host.eq_ignore_ascii_case(&b.host) && a.port == b.port,
            _ => false,
        };
    }
    match (url::Url::parse(a), url::Url::parse(b)) {
        (Ok(a), Ok(b)) => {
            let origin = a.origin();
            origin.is_tuple() && origin == b.origin()
        }
        _ => false,
    }
}

fn field(name: &str) -> String {
    format!("playzone.{name}")
}

impl Changes {
    /// Checks `input` field by field, reporting every refused field at
    /// once (named `playzone.<field>`). `stored` is the Playzone being
    /// updated (`None` on create): a private Playzone needs a token, the
    /// request's or the stored one, as long as no source-hosting app
    /// installation can stand in for it.
    ///
    /// A new `scm_url` on another origin (scheme, host, port) than the
    /// stored one drops the stored token unless the request carries
    /// `credentials` again: otherwise a key that may only edit the
    /// Playzone could point it at a host it controls and have the next
    /// sync send it the token (issue #27, item 1). A private Playzone then
    /// needs the token in the same request (422 naming why).
    ///
    /// An attached Playzone's `scm_url` does not change at all (issue
    /// #49, item 1): it names the repository the installation reads, and
    /// moving it is detaching and attaching another, which says so.
    pub fn validate(input: Input, stored: Option<Stored>, policy: &RepositoryPolicy) -> Result<Changes, FieldErrors> {
        let creating = stored.is_none();
        let mut errors = FieldErrors::new();
        if creating && input.name.is_none() {
            push_field_error(&mut errors, field("name"), "is required");
        }
        if creating && input.scm_url.is_none() {
            push_field_error(&mut errors, field("scm_url"), "is required");
        }
        if let Some(name) = &input.name
            && let Err(message) = crate::validate::display_name(name)
        {
            push_field_error(&mut errors, field("name"), message);
        }
        let mut scm_url = None;
        if let Some(text) = &input.scm_url {
            match policy.check_playzone_url(text) {
                Ok(_) => scm_url = Some(text.trim_end_matches('/').to_owned()),
                Err(message) => push_field_error(&mut errors, field("scm_url"), message),
            }
        }
        if let Some(Some(branch)) = &input.default_branch
            && let Err(message) = branch_name(branch)
        {
            push_field_error(&mut errors, field("default_branch"), message);
        }
        let stored = stored.unwrap_or_default();
        // The URL the credentials are for: an ssh URL takes a deploy key.
        let ssh = crate::repository::ssh::is_ssh_url(input.scm_url.as_deref().unwrap_or(stored.scm_url));
        let credentials = match input.credentials {
            None => None,
            Some(token) if token.is_empty() && !creating => Some(None),
            Some(text) if ssh => match ssh::deploy_key(&text) {
                Ok(key) => Some(Some(key)),
                Err(message) => {
                    push_field_error(&mut errors, field("credentials"), message);
                    Some(None)
                }
            },
            Some(token) => {
                if let Err(message) = check_token(&token) {
                    push_field_error(&mut errors, field("credentials"), message);
                }
                Some(Some(token))
            }
        };
        if stored.attached && scm_url.as_deref().is_some_and(|url| url != stored.scm_url.trim_end_matches('/')) {
            push_field_error(
                &mut errors,
                field("scm_url"),
                "this Playzone is attached to a repository through a source-hosting installation, so its scm_url is \
                 that repository's and does not change: delete the Playzone and attach the other repository \
                 (POST /api/playzones/attach), or create a Playzone on the new URL",
            );
        }
        let moved_origin = stored.has_token && scm_url.as_deref().is_some_and(|url| !same_origin(url, stored.scm_url));
        let credentials = match credentials {
            None if moved_origin => Some(None),
            other => other,
        };
        let private = input.private.unwrap_or(stored.private);
        let has_token = match &credentials {
            Some(token) => token.is_some(),
            None => stored.has_token,
        };
        // An attached Playzone reads through its installation, no token;
        // an ssh one gets its deploy key after it is made
        // (`generate_ssh_key`), or in `credentials`.
        if private && !has_token && !stored.attached && !ssh {
            let message = if moved_origin {
                "the new scm_url is on another origin (scheme, host or port) than the stored access token was given \
                 for: send the token again in credentials (a stored token never follows the URL to another host)"
            } else {
                "a private repository needs an access token in credentials here (a repository of play's own Git \
                 host or of one of the account's app installations is read without one: create the Playzone on its \
                 clone URL without credentials, or attach it with POST /api/playzones/attach)"
            };
            push_field_error(&mut errors, field("credentials"), message);
        }
        let ssh_host_key = match input.ssh_host_key.as_deref() {
            None => None,
            Some("") => Some(None),
            Some(_) if !ssh => {
                push_field_error(&mut errors, field("ssh_host_key"), "is only for a Playzone on an ssh scm_url");
                None
            }
            Some(text) => match ssh::host_key_pin(text) {
                Ok(pin) => Some(Some(pin)),
                Err(message) => {
                    push_field_error(&mut errors, field("ssh_host_key"), message);
                    None
                }
            },
        };
        if !errors.is_empty() {
            return Err(errors);
        }
        Ok(Changes {
            name: input.name,
            scm_url,
            default_branch: input.default_branch,
            private: input.private,
            credentials,
            ssh_host_key,
        })
    }
}

/// An access token: 1 to 1024 printable ASCII characters without spaces
/// (it travels in an HTTP header).
pub fn check_token(token: &str) -> Result<(), String> {
    if token.is_empty() || token.chars().count() > MAX_CREDENTIALS_CHARS {
        return Err(format!("must be 1 to {MAX_CREDENTIALS_CHARS} characters"));
    }
    if !token.chars().all(|c| c.is_ascii_graphic()) {
        return Err("must be printable ASCII without spaces".into());
    }
    Ok(())
}

/// A branch name play passes to git: an allowlisted subset of git's
/// ref-name rules (letters, digits, `._-/+`, no `..`, no component starting
/// with `.` or `-` or ending with `.lock`, no leading, trailing or doubled
/// `/`), at most 255 bytes.
pub fn branch_name(text: &str) -> Result<(), &'static str> {
    const MESSAGE: &str = "must be a branch name: letters, digits, '.', '_', '-', '+' and '/', \
                           without '..', '//', a leading '-' or '.', or a trailing '/', '.' or '.lock'";
    let chars_ok = text.bytes().all(|b| b.is_ascii_alphanumeric() || matches!(b, b'.' | b'_' | b'-' | b'/' | b'+'));
    let components_ok = text.split('/').all(|c| {
        !c.is_empty() && !c.starts_with('.') && !c.starts_with('-') && !c.ends_with(".lock") && !c.ends_with('.')
    });
    if text.is_empty() || text.len() > MAX_BRANCH_BYTES || !chars_ok || !components_ok || text.contains("..") {
        Err(MESSAGE)
    } else {
        Ok(())
    }
}

/// A path inside a repository (env file, Dockerfile): relative, made of
/// letters, digits, `_`, `.`, `/` and `-` (the spec's rule for path
/// labels), no `.` or `..` component, at most 255 bytes.
pub fn repo_path(text: &str) -> Result<(), &'static str> {
    let chars_ok = text.bytes().all(|b| b.is_ascii_alphanumeric() || matches!(b, b'_' | b'.' | b'/' | b'-'));
    let components_ok = text.split('/').all(|c| !c.is_empty() && c != "." && c != "..");
    if text.is_empty() || text.len() > MAX_PATH_BYTES || !chars_ok || !components_ok {
        Err(
            "must be a relative path in the repository: letters, digits, '_', '.', '/' and '-', without '.' or '..' components",
        )
    } else {
        Ok(())
    }
}

#[cfg(test)]
mod tests;
