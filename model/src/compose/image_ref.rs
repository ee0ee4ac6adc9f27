//! Image references as the engine reads them (the `distribution/reference`
//! rules the Docker CLI and daemon apply): which registry a reference
//! names, and which repository on it. One home, so that a reserved name or
//! a registry's address is judged on what the engine will actually use,
//! whatever spelling a tenant chose (`index.docker.io/play-build`,
//! `docker.io/library/play-build`, `PLAY-BUILD`).

/// The registry every reference without one names.
pub const DEFAULT_REGISTRY: &str = "docker.io";

/// A reference, normalised: registry and repository lower-cased (the
/// engine refuses upper case in a repository; comparing in lower case
/// refuses more, never less), Docker Hub's legacy host folded into
/// `docker.io`, and Docker Hub's official images under `library/`.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ImageRef {
    /// `docker.io`, `ghcr.io`, `127.0.0.1:5000`, `localhost`, ...
    pub registry: String,
    /// `library/nginx`, `team/app`.
    pub repository: String,
}

impl ImageRef {
    /// Reads `image` (`[registry/]path[:tag][@digest]`). Never fails: text
    /// the engine would refuse still names some registry and repository,
    /// and a check on them can only refuse more.
    pub fn parse(image: &str) -> ImageRef {
        let name = image.split('@').next().unwrap_or(image);
        let name = match name.rsplit_once(':') {
            Some((repo, tag)) if !tag.contains('/') => repo,
            _ => name,
        };
        let (registry, path) = match name.split_once('/') {
            // The engine's rule: a first component is a registry when it
            // has a dot or a port, is `localhost`, or has upper case.
            Some((first, rest))
                if first.contains(['.', ':'])
                    || first == "localhost"
                    || first.chars().any(|c| c.is_ascii_uppercase()) =>
            {
                (first.to_ascii_lowercase(), rest)
            }
            _ => (DEFAULT_REGISTRY.to_owned(), name),
        };
        let registry = if registry == "index.docker.io" { DEFAULT_REGISTRY.to_owned() } else { registry };
        let path = path.to_ascii_lowercase();
        let repository =
            if registry == DEFAULT_REGISTRY && !path.contains('/') { format!("library/{path}") } else { path };
        ImageRef { registry, repository }
    }

    /// The registry's host, without a port (`[::1]:5000` -> `::1`).
    pub fn registry_host(&self) -> &str {
        let r = self.registry.as_str();
        if let Some(rest) = r.strip_prefix('[') {
            return rest.split(']').next().unwrap_or(rest);
        }
        r.rsplit_once(':').map_or(r, |(host, _)| host)
    }

    /// Whether the reference names Docker Hub's official image `name`
    /// (`nginx` for `docker.io/library/nginx`).
    pub fn is_official(&self, name: &str) -> bool {
        self.registry == DEFAULT_REGISTRY && self.repository == format!("library/{name}")
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn references_read_as_the_engine_reads_them() {
        let cases = [
            ("nginx", "docker.io", "library/nginx"),
            ("nginx:1.27@sha256:00", "docker.io", "library/nginx"),
            ("index.docker.io/nginx", "docker.io", "library/nginx"),
            ("docker.io/team/app:1", "docker.io", "team/app"),
            ("team/app", "docker.io", "team/app"),
            ("ghcr.io/team/app:1", "ghcr.io", "team/app"),
            ("127.0.0.1:5000/app", "127.0.0.1:5000", "app"),
            ("localhost/app", "localhost", "app"),
            ("Registry/app", "registry", "app"),
            ("[::1]:5000/app:v", "[::1]:5000", "app"),
        ];
        for (image, registry, repository) in cases {
            let r = ImageRef::parse(image);
            assert_eq!((r.registry.as_str(), r.repository.as_str()), (registry, repository), "{image}");
        }
        assert_eq!(ImageRef::parse("127.0.0.1:5000/app").registry_host(), "127.0.0.1");
        assert_eq!(ImageRef::parse("[::1]:5000/app").registry_host(), "::1");
        assert_eq!(ImageRef::parse("nginx").registry_host(), "docker.io");
        assert!(ImageRef::parse("INDEX.DOCKER.IO/library/Play-Build:x").is_official("play-build"));
    }
}
