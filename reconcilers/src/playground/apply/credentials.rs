//! Which of a Playspec's registry credentials an image pull uses: the ones
//! whose registry host is the image's, as Docker reads the reference.

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
        assert_eq!(credentials_for(&creds, "library/redis").map(|c| c.username.as_str()), Some("h"));
        assert_eq!(credentials_for(&creds, "redis:7").map(|c| c.username.as_str()), Some("h"));
        assert!(credentials_for(&creds, "ghcr.io/x/y").is_none());
    }
}
