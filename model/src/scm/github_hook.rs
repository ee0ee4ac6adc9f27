//! GitHub's webhook deliveries to play, read before anything is written
//! ("Validating webhook deliveries", "Webhook events and payloads"):
//!
//! - [`verify_signature`]: `X-Hub-Signature-256` is `sha256=` and the hex
//!   HMAC-SHA256 of the raw body under the app's webhook secret, compared
//!   in constant time; a missing or malformed header is a bad signature.
//! - [`plain_header`]: `X-GitHub-Delivery` (a GUID) and `X-GitHub-Event`,
//!   bounded and plain, since the delivery id is stored to process each
//!   delivery once.
//! - [`Change`]: what an `installation`, `installation_repositories`,
//!   `push`, `repository` or `pull_request` event means for installations,
//!   the repositories recorded through them and the pull request index of
//!   the Playzones attached to those. Other events are recorded and change
//!   nothing here.

use serde::Deserialize;
use subtle::ConstantTimeEq;

use super::model::InstallationStatus;
use crate::webhook::delivery::hmac;

/// The app's webhook secret (`PLAY_GITHUB_WEBHOOK_SECRET_FILE`). Its
/// `Debug` shows nothing of it.
#[derive(Clone, PartialEq, Eq)]
pub struct WebhookSecret(Vec<u8>);

impl WebhookSecret {
    pub fn new(secret: impl Into<Vec<u8>>) -> Self {
        WebhookSecret(secret.into())
    }

    /// Whether `header` is GitHub's signature of `body` under this secret.
    pub fn verifies(&self, body: &[u8], header: Option<&str>) -> bool {
        verify_signature(&self.0, body, header)
    }
}

impl std::fmt::Debug for WebhookSecret {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("WebhookSecret(<redacted>)")
    }
}

/// The longest `X-GitHub-Delivery` and `X-GitHub-Event` accepted.
pub const MAX_HEADER_CHARS: usize = 100;

/// Whether `header` is GitHub's signature of `body` under `secret`. The
/// same construction as play's own `X-Webhook-Signature`
/// ([`spec_signature`](crate::webhook::delivery::spec_signature) signs as
/// GitHub does).
pub fn verify_signature(secret: &[u8], body: &[u8], header: Option<&str>) -> bool {
    let Some(hex_digest) = header.and_then(|h| h.strip_prefix("sha256=")) else { return false };
    let Ok(given) = hex::decode(hex_digest) else { return false };
    let expected = hmac(secret, &[body]);
    // Constant time: the comparison takes as long wherever they differ.
    given.len() == expected.len() && bool::from(expected.as_slice().ct_eq(&given))
}

/// A delivery's id or event name: 1 to [`MAX_HEADER_CHARS`] of ASCII
/// letters, digits, `-` and `_`.
pub fn plain_header(value: Option<&str>) -> Option<&str> {
    value.filter(|v| {
        !v.is_empty()
            && v.len() <= MAX_HEADER_CHARS
            && v.chars().all(|c| c.is_ascii_alphanumeric() || c == '-' || c == '_')
    })
}

/// What a delivery means for an installation's state.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Change {
    /// The installation (GitHub's id) is now in this state.
    Status { installation: String, status: InstallationStatus },
    /// These repositories (`owner/name`) left the installation's reach.
    RepositoriesRemoved { installation: String, full_names: Vec<String> },
    /// A push moved `branch` of `full_name` from `before` (`None`: the
    /// branch was created) to `after`. A deleted branch, or a tag, is
    /// [`Change::None`]: it moves no commit a Playzone could build.
    Pushed { installation: String, full_name: String, branch: String, before: Option<String>, after: String },
    /// Repository `from` (`owner/name`) is now named `to` (same owner).
    Renamed { installation: String, from: String, to: String },
    /// Repository `full_name` became private (`true`) or public.
    Visibility { installation: String, full_name: String, private: bool },
    /// A pull request of `full_name` is now as described (opened,
    /// reopened, a new head, closed, retargeted, edited).
    Pull { installation: String, full_name: String, pull: Box<super::pulls::PullRequest> },
    /// Nothing to change (other events and actions, `ping`).
    None,
}

#[derive(Deserialize)]
struct Payload {
    action: Option<String>,
    installation: Option<InstallationRef>,
    #[serde(default)]
    repositories_removed: Vec<RepositoryRef>,
}

/// GitHub's `push` payload, the fields play reads.
#[derive(Deserialize)]
struct PushPayload {
    #[serde(rename = "ref")]
    reference: String,
    before: String,
    after: String,
    #[serde(default)]
    deleted: bool,
    repository: RepositoryRef,
    installation: Option<InstallationRef>,
}

/// The all-zero id GitHub's `before` holds for a created branch.
fn commit_or_none(id: &str) -> Option<String> {
    let hex = id.len() == 40 && id.bytes().all(|b| b.is_ascii_hexdigit());
    (hex && id.bytes().any(|b| b != b'0')).then(|| id.to_ascii_lowercase())
}

fn pushed(body: &[u8]) -> Result<Change, String> {
    let payload: PushPayload = serde_json::from_slice(body).map_err(|e| format!("not a GitHub push payload: {e}"))?;
    let installation = payload.installation.ok_or("the payload names no installation")?.id.to_string();
    let Some(branch) = payload.reference.strip_prefix("refs/heads/") else { return Ok(Change::None) };
    let Some(after) = commit_or_none(&payload.after).filter(|_| !payload.deleted) else { return Ok(Change::None) };
    if crate::playzone::branch_name(branch).is_err() {
        return Ok(Change::None);
    }
    Ok(Change::Pushed {
        installation,
        full_name: payload.repository.full_name,
        branch: branch.to_owned(),
        before: commit_or_none(&payload.before),
        after,
    })
}

/// GitHub's `repository` payload, the fields play reads.
#[derive(Deserialize)]
struct RepositoryPayload {
    action: String,
    repository: RepositoryRef,
    installation: Option<InstallationRef>,
    changes: Option<Changes>,
}

#[derive(Deserialize)]
struct Changes {
    repository: Option<RepositoryChanges>,
}

#[derive(Deserialize)]
struct RepositoryChanges {
    name: Option<From>,
}

#[derive(Deserialize)]
struct From {
    from: String,
}

/// `repository` events: deleted and transferred (the installation no
/// longer reaches it under that name) drop the record, renamed renames
/// it, privatized and publicized follow the visibility.
fn repository(body: &[u8]) -> Result<Change, String> {
    let payload: RepositoryPayload =
        serde_json::from_slice(body).map_err(|e| format!("not a GitHub repository payload: {e}"))?;
    let installation = payload.installation.ok_or("the payload names no installation")?.id.to_string();
    let full_name = payload.repository.full_name;
    Ok(match payload.action.as_str() {
        "deleted" | "transferred" => Change::RepositoriesRemoved { installation, full_names: vec![full_name] },
        "privatized" | "publicized" => {
            Change::Visibility { installation, full_name, private: payload.action == "privatized" }
        }
        "renamed" => {
            let old = payload.changes.and_then(|c| c.repository?.name).ok_or("a rename names no old name")?.from;
            let owner = full_name.split_once('/').map(|(owner, _)| owner).ok_or("not a full name")?;
            Change::Renamed { installation, from: format!("{owner}/{old}"), to: full_name }
        }
        _ => Change::None,
    })
}

/// GitHub's `pull_request` payload, the fields play reads.
#[derive(Deserialize)]
struct PullPayload {
    pull_request: PullBody,
    repository: RepositoryRef,
    installation: Option<InstallationRef>,
}

#[derive(Deserialize)]
struct PullBody {
    number: u64,
    state: String,
    title: String,
    html_url: String,
    updated_at: chrono::DateTime<chrono::Utc>,
    head: PullEnd,
    base: PullEnd,
}

#[derive(Deserialize)]
struct PullEnd {
    #[serde(rename = "ref")]
    reference: String,
    sha: String,
    repo: Option<RepositoryRef>,
}

/// `pull_request` events: the pull request as the payload describes it
/// (the pull request index keeps the later description, whatever the
/// action was).
fn pull_request(body: &[u8]) -> Result<Change, String> {
    let payload: PullPayload =
        serde_json::from_slice(body).map_err(|e| format!("not a GitHub pull_request payload: {e}"))?;
    let installation = payload.installation.ok_or("the payload names no installation")?.id.to_string();
    let p = payload.pull_request;
    let head_sha = commit_or_none(&p.head.sha).ok_or("the pull request's head is not a commit id")?;
    let head_repo = p.head.repo.map(|r| r.full_name);
    let fork = head_repo.as_ref().is_none_or(|h| !h.eq_ignore_ascii_case(&payload.repository.full_name));
    let pull = super::pulls::PullRequest {
        number: p.number,
        state: if p.state == "open" { super::pulls::PullState::Open } else { super::pulls::PullState::Closed },
        head_sha,
        head_ref: p.head.reference.chars().take(255).collect(),
        head_repo,
        base_ref: p.base.reference.chars().take(255).collect(),
        fork,
        title: p.title.chars().take(300).collect(),
        html_url: p.html_url.chars().take(500).collect(),
        updated_at: p.updated_at,
    };
    Ok(Change::Pull { installation, full_name: payload.repository.full_name, pull: Box::new(pull) })
}

#[derive(Deserialize)]
struct InstallationRef {
    id: u64,
}

#[derive(Deserialize)]
struct RepositoryRef {
    full_name: String,
}

/// Reads the `event` delivery `body` (already verified). A body that is
/// not the documented JSON is `Err` with the reason.
pub fn change(event: &str, body: &[u8]) -> Result<Change, String> {
    if event == "push" {
        return pushed(body);
    }
    if event == "repository" {
        return repository(body);
    }
    if event == "pull_request" {
        return pull_request(body);
    }
    if !matches!(event, "installation" | "installation_repositories") {
        return Ok(Change::None);
    }
    let payload: Payload = serde_json::from_slice(body).map_err(|e| format!("not a GitHub {event} payload: {e}"))?;
    let installation = payload.installation.ok_or("the payload names no installation")?.id.to_string();
    let status = match (event, payload.action.as_deref()) {
        ("installation", Some("deleted")) => InstallationStatus::Removed,
        ("installation", Some("suspend")) => InstallationStatus::Suspended,
        ("installation", Some("unsuspend" | "created" | "new_permissions_accepted")) => InstallationStatus::Active,
        ("installation_repositories", Some("removed")) => {
            let full_names = payload.repositories_removed.into_iter().map(|r| r.full_name).collect();
            return Ok(Change::RepositoriesRemoved { installation, full_names });
        }
        _ => return Ok(Change::None),
    };
    Ok(Change::Status { installation, status })
}

/// One delivery as it arrived: the provider's (unsigned) id, its event
/// name, and the raw body its signature verified.
#[derive(Clone, Copy, Debug)]
pub struct Delivery<'a> {
    pub id: &'a str,
    pub event: &'a str,
    pub body: &'a [u8],
}

/// What the store did with a delivery (`play_store::scm_deliveries::receive`).
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Received {
    /// First seen: its change was applied; the Playzones whose sync should
    /// run now (they read through an installation or repository that
    /// changed).
    Applied(Vec<i64>),
    /// Its delivery id was recorded before (the provider's retry or
    /// redelivery): nothing changed.
    Redelivered,
    /// Its body was recorded before under another delivery id: someone
    /// sent a signed body again. Nothing changed.
    Replayed,
}

impl Received {
    /// Whether the delivery was one play had already received.
    pub fn duplicate(&self) -> bool {
        !matches!(self, Received::Applied(_))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::webhook::delivery::spec_signature;

    const SECRET: &str = "It's a Secret to Everybody";

    #[test]
    fn githubs_documented_example_verifies() {
        // "Validating webhook deliveries": this secret and body give this
        // signature.
        let header = "sha256=757107ea0eb2509fc211221cce984b8a37570b6d7586c22c46f4379c8b043e17";
        assert!(verify_signature(SECRET.as_bytes(), b"Hello, World!", Some(header)));
        assert_eq!(spec_signature(SECRET, b"Hello, World!"), header);
    }

    #[test]
    fn anything_else_is_a_bad_signature() {
        let body = br#"{"action":"deleted","installation":{"id":1}}"#;
        let good = spec_signature(SECRET, body);
        assert!(verify_signature(SECRET.as_bytes(), body, Some(&good)));
        let tampered = br#"{"action":"deleted","installation":{"id":2}}"#;
        assert!(!verify_signature(SECRET.as_bytes(), tampered, Some(&good)));
        assert!(!verify_signature(b"another secret", body, Some(&good)));
        assert!(!verify_signature(SECRET.as_bytes(), body, None));
        assert!(!verify_signature(SECRET.as_bytes(), body, Some(&good.replace("sha256=", "sha1="))));
        assert!(!verify_signature(SECRET.as_bytes(), body, Some(&good[..good.len() - 2])));
        assert!(!verify_signature(SECRET.as_bytes(), body, Some("sha256=zz")));
        assert!(!verify_signature(SECRET.as_bytes(), body, Some("sha256=")));
    }

    #[test]
    fn delivery_ids_and_event_names_are_plain_and_bounded() {
        assert_eq!(
            plain_header(Some("72d3162e-cc78-11e3-81ab-4c9367dc0958")),
            Some("72d3162e-cc78-11e3-81ab-4c9367dc0958")
        );
        assert_eq!(plain_header(Some("installation_repositories")), Some("installation_repositories"));
        for bad in ["", "a b", "a\nb", "../x", "é", &"a".repeat(MAX_HEADER_CHARS + 1)] {
            assert_eq!(plain_header(Some(bad)), None, "{bad:?}");
        }
        assert_eq!(plain_header(None), None);
    }

    #[test]
    fn installation_events_change_the_status() {
        let event = |action: &str| {
            format!(
                r#"{{"action":"{action}","installation":{{"id":42,"account":{{"login":"acme"}}}},"sender":{{"login":"octocat"}}}}"#
            )
        };
        let status = |action: &str| change("installation", event(action).as_bytes()).unwrap();
        let is = |status| Change::Status { installation: "42".into(), status };
        assert_eq!(status("deleted"), is(InstallationStatus::Removed));
        assert_eq!(status("suspend"), is(InstallationStatus::Suspended));
        assert_eq!(status("unsuspend"), is(InstallationStatus::Active));
        assert_eq!(status("created"), is(InstallationStatus::Active));
        assert_eq!(status("some_future_action"), Change::None);
    }

    #[test]
    fn removed_repositories_are_named() {
        let body = br#"{"action":"removed","installation":{"id":42},"repository_selection":"selected",
            "repositories_added":[],"repositories_removed":[{"id":1,"name":"web","full_name":"acme/web","private":true}]}"#;
        let expected = Change::RepositoriesRemoved { installation: "42".into(), full_names: vec!["acme/web".into()] };
        assert_eq!(change("installation_repositories", body).unwrap(), expected);
        let added = br#"{"action":"added","installation":{"id":42},"repositories_added":[],"repositories_removed":[]}"#;
        assert_eq!(change("installation_repositories", added).unwrap(), Change::None);
    }

    #[test]
    fn other_events_change_nothing_and_bad_payloads_are_refused() {
        assert!(change("push", b"not even json").is_err());
        assert_eq!(change("ping", br#"{"zen":"Design for failure."}"#).unwrap(), Change::None);
        assert!(change("installation", b"[]").is_err());
        assert!(change("installation", br#"{"action":"deleted"}"#).is_err());
    }

    #[test]
    fn a_push_to_a_branch_names_it_and_its_commits() {
        let body = |reference: &str, before: &str, after: &str, deleted: bool| {
            format!(
                r#"{{"ref":"{reference}","before":"{before}","after":"{after}","created":false,"deleted":{deleted},
                "forced":false,"repository":{{"id":1,"name":"web","full_name":"acme/web","private":true}},
                "pusher":{{"name":"octocat"}},"installation":{{"id":42}},"commits":[]}}"#
            )
        };
        let (zero, a, b) = ("0".repeat(40), "a".repeat(40), "b".repeat(40));
        let moved = change("push", body("refs/heads/main", &a, &b, false).as_bytes()).unwrap();
        let expected = Change::Pushed {
            installation: "42".into(),
            full_name: "acme/web".into(),
            branch: "main".into(),
            before: Some(a.clone()),
            after: b.clone(),
        };
        assert_eq!(moved, expected);
        let created = change("push", body("refs/heads/feature/x", &zero, &b, false).as_bytes()).unwrap();
        assert!(matches!(created, Change::Pushed { before: None, ref branch, .. } if branch == "feature/x"));
        for ignored in [
            body("refs/heads/main", &a, &zero, true),
            body("refs/tags/v1", &zero, &b, false),
            body("refs/heads/bad..name", &a, &b, false),
        ] {
            assert_eq!(change("push", ignored.as_bytes()).unwrap(), Change::None, "{ignored}");
        }
    }

    #[test]
    fn repository_events_rename_drop_and_follow_visibility() {
        let body = |action: &str, full_name: &str, changes: &str| {
            format!(
                r#"{{"action":"{action}","repository":{{"id":1,"name":"x","full_name":"{full_name}","private":true}},
                "installation":{{"id":42}},"changes":{changes},"sender":{{"login":"octocat"}}}}"#
            )
        };
        let renamed = body("renamed", "acme/shop", r#"{"repository":{"name":{"from":"store"}}}"#);
        let expected = Change::Renamed { installation: "42".into(), from: "acme/store".into(), to: "acme/shop".into() };
        assert_eq!(change("repository", renamed.as_bytes()).unwrap(), expected);
        let deleted = change("repository", body("deleted", "acme/shop", "{}").as_bytes()).unwrap();
        assert_eq!(
            deleted,
            Change::RepositoriesRemoved { installation: "42".into(), full_names: vec!["acme/shop".into()] }
        );
        let private = change("repository", body("privatized", "acme/shop", "{}").as_bytes()).unwrap();
        assert_eq!(
            private,
            Change::Visibility { installation: "42".into(), full_name: "acme/shop".into(), private: true }
        );
        assert_eq!(change("repository", body("edited", "acme/shop", "{}").as_bytes()).unwrap(), Change::None);
        assert!(change("repository", body("renamed", "acme/shop", "{}").as_bytes()).is_err());
    }
}
