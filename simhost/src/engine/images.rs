//! Images: present or not, by normalised reference. A pull makes an image
//! present when the host is configured to allow pulls; no layers exist.

use std::collections::HashMap;

use bollard::models::{EventMessageTypeEnum, ImageInspect};

use super::SimEngine;
use crate::{Error, Result};

/// One spelling per image: `busybox`, `busybox:latest` and
/// `docker.io/library/busybox:latest` are the same image to the engine.
/// A digest reference (`name@sha256:...`) is kept as it is.
pub fn normalise(reference: &str) -> String {
    let reference = reference.trim();
    let short = reference
        .strip_prefix("docker.io/library/")
        .or_else(|| reference.strip_prefix("index.docker.io/library/"))
        .or_else(|| reference.strip_prefix("docker.io/"))
        .unwrap_or(reference);
    if short.contains('@') {
        return short.to_owned();
    }
    let last = short.rsplit('/').next().unwrap_or(short);
    if last.contains(':') { short.to_owned() } else { format!("{short}:latest") }
}

/// A stable id for an image reference (the simulator has no content).
pub fn image_id(reference: &str) -> String {
    use std::hash::{Hash, Hasher};
    let mut hasher = std::collections::hash_map::DefaultHasher::new();
    normalise(reference).hash(&mut hasher);
    format!("sha256:{:064x}", u128::from(hasher.finish()))
}

impl SimEngine {
    /// `GET /images/{name}/json`.
    pub fn inspect_image(&self, reference: &str) -> Result<ImageInspect> {
        let name = normalise(reference);
        if !self.lock().images.contains(&name) {
            return Err(Error::NotFound(format!("No such image: {reference}")));
        }
        Ok(ImageInspect {
            id: Some(image_id(&name)),
            repo_tags: Some(vec![name]),
            repo_digests: Some(Vec::new()),
            architecture: Some("amd64".to_owned()),
            os: Some("linux".to_owned()),
            size: Some(0),
            ..Default::default()
        })
    }

    /// `POST /images/create?fromImage=&tag=`: 404 when pulls are refused
    /// and the image is not present.
    pub fn pull_image(&self, reference: &str) -> Result<()> {
        let name = normalise(reference);
        let mut state = self.lock();
        if !state.images.contains(&name) && !self.config.pullable {
            return Err(Error::NotFound(format!(
                "pull access denied for {reference}, repository does not exist or may require 'docker login'"
            )));
        }
        state.images.insert(name.clone());
        self.emit(EventMessageTypeEnum::IMAGE, "pull", &name, HashMap::from([("name".to_owned(), name.clone())]));
        Ok(())
    }

    /// Whether the image is on the host.
    pub fn has_image(&self, reference: &str) -> bool {
        self.lock().images.contains(&normalise(reference))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn spellings_of_one_image_normalise_to_one_name() {
        assert_eq!(normalise("busybox"), "busybox:latest");
        assert_eq!(normalise("docker.io/library/busybox:latest"), "busybox:latest");
        assert_eq!(normalise("play-test/busybox:1"), "play-test/busybox:1");
        assert_eq!(normalise("localhost:5000/app"), "localhost:5000/app:latest");
        assert_eq!(normalise("app@sha256:abc"), "app@sha256:abc");
    }
}
