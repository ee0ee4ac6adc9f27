//! Names play uses for its own host objects, refused in user Compose under
//! every policy (a trusted Playroom lifts isolation rules, not the
//! integrity of play's own objects).
//!
//! Every object play creates is named from the Playground's Compose
//! project, `play-<installation>-<id>[-<slug>]`, or is the installation's
//! edge network, `play-<installation>-edge`; the mounted-files volume of a
//! Playground is `<project>__play_files`. A tenant who could name one of
//! these would reach another Playground's network or volume, the edge
//! network, or its own files volume, whose files play bind-mounts by host
//! path (see `docs/security.md`). So, as an allowlist:
//!
//! - keys of top-level `networks` and `volumes` follow Compose's own rule
//!   for names (a letter or digit, then letters, digits, `_`, `.`, `-`):
//!   `_play_files` is not a key, so `<project>_<key>` never equals the
//!   files volume;
//! - an explicit `name:` of a network or volume never starts with
//!   [`RESERVED_PREFIX`], the prefix of every object play names;
//! - labels under [`RESERVED_LABEL_PREFIX`] are play's alone: play finds,
//!   sweeps and routes its objects by them;
//! - a service's `image` never names `play-build`, the repository of the
//!   images play builds from Playzones (one account's code must not run
//!   under another account's static service).

use super::ctx::Ctx;
use super::image_ref::ImageRef;
use super::model::ComposeFile;
use super::path::Path;

/// The prefix of every host object name play makes.
pub const RESERVED_PREFIX: &str = "play-";

/// The prefix of the labels play sets on its host objects.
pub const RESERVED_LABEL_PREFIX: &str = "dev.play.";

/// The repository of every image play builds from a Playzone
/// (`crate::build`).
pub const BUILD_IMAGE_REPO: &str = "play-build";

/// Whether `image` names play's own build repository (refused in tenant
/// Compose files and Dockerfiles), in any spelling the engine normalises to
/// it ([`ImageRef`]).
pub fn is_reserved_image(image: &str) -> bool {
    ImageRef::parse(image).is_official(BUILD_IMAGE_REPO)
}

/// Compose's rule for service, network and volume keys.
pub(crate) fn valid_key(name: &str) -> bool {
    let mut bytes = name.bytes();
    bytes.next().is_some_and(|b| b.is_ascii_alphanumeric())
        && bytes.all(|b| b.is_ascii_alphanumeric() || matches!(b, b'_' | b'.' | b'-'))
}

/// Records an error for every use of a reserved name in `file`.
pub(crate) fn check(file: &ComposeFile, ctx: &mut Ctx<'_>) {
    let named = file
        .networks
        .iter()
        .map(|(key, n)| ("networks", key, n.name.as_deref()))
        .chain(file.volumes.iter().map(|(key, v)| ("volumes", key, v.name.as_deref())));
    for (kind, key, name) in named {
        let at = Path::root().key(kind).key(key.clone());
        if !valid_key(key) {
            ctx.error(
                &at,
                format!(
                    "{kind} key `{key}` must start with a letter or digit and contain only letters, digits, `_`, `.` and `-`"
                ),
            );
        }
        if let Some(name) = name
            && name.to_ascii_lowercase().starts_with(RESERVED_PREFIX)
        {
            ctx.error(
                &at.key("name"),
                format!(
                    "`{name}`: names starting with `{RESERVED_PREFIX}` are reserved for objects play creates \
                     (other Playgrounds' networks and volumes, the edge network); choose another name"
                ),
            );
        }
    }
    for (service_name, service) in &file.services {
        if let Some(image) = &service.image
            && is_reserved_image(image)
        {
            let at = Path::root().key("services").key(service_name.clone()).key("image");
            ctx.error(
                &at,
                format!(
                    "`{image}`: the `{}` image repository is reserved for images play builds from Playzones",
                    BUILD_IMAGE_REPO
                ),
            );
        }
        for key in service.labels.keys() {
            if key.to_ascii_lowercase().starts_with(RESERVED_LABEL_PREFIX) {
                let at = Path::root().key("services").key(service_name.clone()).key("labels").key(key.clone());
                ctx.error(
                    &at,
                    format!("labels under `{RESERVED_LABEL_PREFIX}` are reserved: play sets them on its own objects"),
                );
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::valid_key;

    #[test]
    fn keys_follow_the_compose_rule() {
        for key in ["db", "app-data", "a.b_c", "0cache"] {
            assert!(valid_key(key), "{key}");
        }
        for key in ["_play_files", "", "-x", ".x", "a/b", "a b", "é"] {
            assert!(!valid_key(key), "{key}");
        }
    }
}
