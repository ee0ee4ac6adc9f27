//! Pulling images with registry credentials, through whatever path the
//! Docker client uses (the SSH tunnel for remote Playrooms).
//!
//! The engine, not play, talks to the registry: credentials travel to the
//! engine in the `X-Registry-Auth` header of the pull request, over the
//! tunnel, and are never written to the host's disk.

use std::fmt;
use std::time::Duration;

use bollard::Docker;
use bollard::auth::DockerCredentials;
use bollard::query_parameters::CreateImageOptions;
use futures::StreamExt as _;
use play_model::host::HostError;

use crate::error::{Error, Result};

/// Credentials for one registry. `Debug` redacts the password.
#[derive(Clone, PartialEq, Eq)]
pub struct RegistryCredentials {
    pub username: String,
    pub password: String,
    /// Registry address as in the image reference: `registry.example.org`,
    /// `127.0.0.1:5000`.
    pub server: String,
}

impl fmt::Debug for RegistryCredentials {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("RegistryCredentials")
            .field("username", &self.username)
            .field("password", &"<redacted>")
            .field("server", &self.server)
            .finish()
    }
}

/// Pulls `image` (`registry/name:tag` or `name@sha256:...`) onto the engine
/// behind `docker`, within `timeout` for the whole pull.
///
/// A registry refusing the credentials (or asking for some) is
/// [`Error::RegistryUnauthorized`]; a missing image is `not_found`.
pub async fn pull_image(
    docker: &Docker,
    image: &str,
    credentials: Option<&RegistryCredentials>,
    timeout: Duration,
) -> Result<()> {
    let (from_image, tag) = split_reference(image);
    let options = CreateImageOptions {
        from_image: Some(from_image.to_owned()),
        tag: tag.map(str::to_owned),
        ..CreateImageOptions::default()
    };
    let auth = credentials.map(|c| DockerCredentials {
        username: Some(c.username.clone()),
        password: Some(c.password.clone()),
        serveraddress: Some(c.server.clone()),
        ..DockerCredentials::default()
    });
    let pull = async {
        let mut progress = docker.create_image(Some(options), None, auth);
        while let Some(step) = progress.next().await {
            step.map_err(|e| classify(image, e))?;
        }
        Ok(())
    };
    tokio::time::timeout(timeout, pull)
        .await
        .map_err(|_| HostError::Timeout(format!("pulling {image} took over {timeout:?}")))?
}

/// `repo[:tag]` → (`repo`, `tag`); a digest reference stays whole.
fn split_reference(image: &str) -> (&str, Option<&str>) {
    if image.contains('@') {
        return (image, None);
    }
    let name_start = image.rfind('/').map_or(0, |i| i + 1);
    match image[name_start..].rfind(':') {
        Some(i) => (&image[..name_start + i], Some(&image[name_start + i + 1..])),
        None => (image, Some("latest")),
    }
}

fn classify(image: &str, error: bollard::errors::Error) -> Error {
    use bollard::errors::Error as B;
    let message = match &error {
        B::DockerResponseServerError { message, .. } => message.clone(),
        B::DockerStreamError { error } => error.clone(),
        _ => return Error::docker("pull", error),
    };
    let lower = message.to_lowercase();
    if ["unauthorized", "authentication required", "no basic auth", "denied"]
        .iter()
        .any(|needle| lower.contains(needle))
    {
        Error::RegistryUnauthorized { image: image.to_owned(), message }
    } else if lower.contains("not found") || lower.contains("manifest unknown") {
        Error::Host(HostError::NotFound(format!("{image}: {message}")))
    } else {
        Error::PullFailed { image: image.to_owned(), message }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn references_split_at_the_tag_not_the_port() {
        assert_eq!(
            split_reference("127.0.0.1:5000/play-test/busybox:1"),
            ("127.0.0.1:5000/play-test/busybox", Some("1"))
        );
        assert_eq!(split_reference("127.0.0.1:5000/busybox"), ("127.0.0.1:5000/busybox", Some("latest")));
        assert_eq!(split_reference("busybox@sha256:ab"), ("busybox@sha256:ab", None));
    }

    #[test]
    fn credential_refusals_and_pull_failures_are_named() {
        let refused = classify(
            "r/x:1",
            bollard::errors::Error::DockerResponseServerError {
                status_code: 500,
                message: "Head \"http://r/v2/x/manifests/1\": unauthorized: authentication required".into(),
            },
        );
        assert!(matches!(refused, Error::RegistryUnauthorized { .. }), "{refused}");
        let unreachable = classify(
            "play-test/gone:1",
            bollard::errors::Error::DockerResponseServerError {
                status_code: 500,
                message:
                    "Get \"https://registry-1.docker.io/v2/\": dial tcp: lookup registry-1.docker.io: no such host"
                        .into(),
            },
        );
        assert!(unreachable.to_string().starts_with("pulling the image play-test/gone:1 failed: Get"), "{unreachable}");
        assert!(!unreachable.is_terminal());
        let creds = RegistryCredentials { username: "u".into(), password: "hunter2".into(), server: "r".into() };
        assert!(!format!("{creds:?}").contains("hunter2"));
    }
}

/// Checks the registry an image would be pulled from against the
/// operator's address policy (`PLAY_REGISTRY_ALLOWLIST`), for an untrusted
/// Playroom: the engine trusts registries on loopback without TLS, and
/// pulls from whatever address a name resolves to, so `127.0.0.1:5000/x`
/// or a name that resolves to the metadata service would reach the
/// Playroom's host network (issue #27, item 5). Docker Hub is not
/// resolved (it is the public default). An address literal is judged as
/// written; a name by every address it resolves to from play's side (the
/// same rule as webhook targets and repositories). A name play cannot
/// resolve is let through: the engine resolves it itself, and a name
/// that resolves differently there is outside what play can see.
pub async fn check_registry(policy: &play_model::webhook::UrlPolicy, image: &str) -> std::result::Result<(), String> {
    use play_model::compose::image_ref::{DEFAULT_REGISTRY, ImageRef};

    let reference = ImageRef::parse(image);
    if reference.registry == DEFAULT_REGISTRY {
        return Ok(());
    }
    let host = reference.registry_host().to_owned();
    let refuse = |why: String| {
        format!(
            "the image {image} is pulled from the registry {}, and {why}: registries on loopback, private, \
             link-local or metadata addresses are refused on an untrusted Playroom unless the operator allowlists \
             them (PLAY_REGISTRY_ALLOWLIST)",
            reference.registry
        )
    };
    if policy.host_allowed(&host) {
        return Ok(());
    }
    if let Ok(ip) = host.parse::<std::net::IpAddr>() {
        if policy.address_allowed(ip) {
            return Ok(());
        }
        let what = play_model::webhook::url::non_public(ip).unwrap_or("refused");
        return Err(refuse(format!("{ip} is {what}")));
    }
    let resolved = match tokio::net::lookup_host((host.as_str(), 443)).await {
        Ok(addrs) => addrs.collect::<Vec<_>>(),
        Err(_) => return Ok(()),
    };
    policy.check_resolved(&host, resolved).map(|_| ()).map_err(refuse)
}

#[cfg(test)]
mod address_tests {
    use play_model::webhook::UrlPolicy;

    use super::check_registry;

    #[tokio::test]
    async fn registries_on_non_public_addresses_are_refused_unless_allowlisted() {
        let strict = UrlPolicy::default();
        for image in ["127.0.0.1:5000/x", "localhost:5000/app:1", "[::1]:5000/x", "169.254.169.254/x", "10.1.2.3:443/a"]
        {
            let refused = check_registry(&strict, image).await.expect_err(image);
            assert!(refused.contains("PLAY_REGISTRY_ALLOWLIST") && refused.contains(image), "{refused}");
        }
        for image in ["nginx", "index.docker.io/library/nginx:1", "team/app"] {
            check_registry(&strict, image).await.expect(image);
        }
        let open =
            UrlPolicy { allowlist: UrlPolicy::parse_allowlist("127.0.0.1,localhost").unwrap(), ..UrlPolicy::default() };
        check_registry(&open, "127.0.0.1:5000/x").await.expect("allowlisted address");
        check_registry(&open, "localhost:5000/x").await.expect("allowlisted name");
        check_registry(&open, "[::1]:5000/x").await.expect_err("not allowlisted");
    }
}
