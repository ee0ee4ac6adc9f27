//! Which of a Playspec's registry credentials an image pull uses (the ones
//! whose registry host is the image's, as Docker reads the reference), and
//! the credentials a build gets for the images its Dockerfile pulls.

use std::collections::HashMap;

use bollard::auth::DockerCredentials;

use crate::host::RegistryCredentials;

/// The registry an image reference pulls from, as Docker reads it.
pub fn registry_of(image: &str) -> &str {
    match image.split_once('/') {
        Some((first, _)) if first.contains(['.', ':']) || first == "localhost" => first,
        _ => "docker.io",
    }
}

fn normalise_registry(url: &str) -> &str {
    let host = url.trim_start_matches("https://").trim_start_matches("http://");
    let host = host.split('/').next().unwrap_or(host);
    match host {
        "index.docker.io" | "registry-1.docker.io" | "registry.hub.docker.com" => "docker.io",
        other => other,
    }
}

/// Every credential for a build, keyed by registry as the engine looks
/// them up for a `FROM` (`X-Registry-Config`): the host (`127.0.0.1:5000`,
/// `ghcr.io`), or Docker Hub's index address. The engine sends each only
/// to its registry; none reaches the build's layers or log.
pub fn build_auth(all: &[RegistryCredentials]) -> HashMap<String, DockerCredentials> {
    all.iter()
        .map(|c| {
            let key = match normalise_registry(&c.server) {
                "docker.io" => "https://index.docker.io/v1/".to_owned(),
                host => host.to_owned(),
            };
            let auth = DockerCredentials {
                username: Some(c.username.clone()),
                password: Some(c.password.clone()),
                serveraddress: Some(key.clone()),
                ..DockerCredentials::default()
            };
            (key, auth)
        })
        .collect()
}

/// The credentials whose registry is the image's.
pub fn credentials_for<'a>(all: &'a [RegistryCredentials], image: &str) -> Option<&'a RegistryCredentials> {
    let registry = registry_of(image);
    all.iter().find(|c| normalise_registry(&c.server).eq_ignore_ascii_case(registry))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn credentials_match_by_registry_host() {
        let creds = vec![
            RegistryCredentials {
                username: "u".into(),
                password: "p".into(),
                server: "https://127.0.0.1:5000/".into(),
            },
            RegistryCredentials { username: "h".into(), password: "p".into(), server: "index.docker.io".into() },
        ];
        assert_eq!(credentials_for(&creds, "127.0.0.1:5000/app:1").map(|c| c.username.as_str()), Some("u"));
        let auth = build_auth(&creds);
        let keys: std::collections::BTreeSet<&str> = auth.keys().map(String::as_str).collect();
        assert_eq!(keys, ["127.0.0.1:5000", "https://index.docker.io/v1/"].into());
        assert_eq!(auth["127.0.0.1:5000"].username.as_deref(), Some("u"));
        assert_eq!(credentials_for(&creds, "library/redis").map(|c| c.username.as_str()), Some("h"));
        assert_eq!(credentials_for(&creds, "redis:7").map(|c| c.username.as_str()), Some("h"));
        assert!(credentials_for(&creds, "ghcr.io/x/y").is_none());
    }
}
