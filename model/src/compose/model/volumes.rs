//! Service volumes: short syntax `[SOURCE:]TARGET[:MODE]` and the long
//! syntax mapping.

use serde_yaml::Value;

use crate::compose::ctx::{Ctx, untag};
use crate::compose::path::Path;

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum VolumeType {
    /// A named (or, without source, anonymous) volume.
    Volume,
    /// A host path.
    Bind,
    Tmpfs,
    Npipe,
    Image,
    Cluster,
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ServiceVolume {
    pub kind: VolumeType,
    /// Volume name, host path or image; `None` for anonymous volumes and tmpfs.
    pub source: Option<String>,
    pub target: String,
    pub read_only: bool,
}

const MODES: &[&str] = &[
    "ro",
    "rw",
    "z",
    "Z",
    "cached",
    "delegated",
    "consistent",
    "nocopy",
    "rprivate",
    "private",
    "rshared",
    "shared",
    "rslave",
    "slave",
];

fn is_mode(text: &str) -> bool {
    text.split(',').all(|m| MODES.contains(&m))
}

/// A short-syntax source is a host path when it looks like one; otherwise it
/// names a volume.
fn is_host_path(source: &str) -> bool {
    source.starts_with(['/', '.', '~', '\\'])
        || (source.len() >= 2 && source.as_bytes()[1] == b':' && source.as_bytes()[0].is_ascii_alphabetic())
}

pub(crate) fn parse_short(text: &str) -> Result<ServiceVolume, String> {
    let parts: Vec<&str> = text.split(':').collect();
    let (source, target, mode) = match parts.as_slice() {
        [target] => (None, *target, None),
        [target, mode] if !mode.starts_with('/') && is_mode(mode) => (None, *target, Some(*mode)),
        [source, target] => (Some(*source), *target, None),
        [source, target, mode] => (Some(*source), *target, Some(*mode)),
        _ => {
            return Err(format!("`{text}` is not a volume (`[SOURCE:]TARGET[:MODE]`)"));
        }
    };
    if !target.starts_with('/') {
        return Err(format!("volume target `{target}` must be an absolute path in the container"));
    }
    if let Some(mode) = mode
        && !is_mode(mode)
    {
        return Err(format!("volume mode `{mode}` is not one of {}", MODES.join(", ")));
    }
    let read_only = mode.is_some_and(|m| m.split(',').any(|x| x == "ro"));
    let kind = match source {
        Some("") => return Err(format!("`{text}` has an empty source")),
        Some(s) if is_host_path(s) => VolumeType::Bind,
        _ => VolumeType::Volume,
    };
    Ok(ServiceVolume { kind, source: source.map(str::to_owned), target: target.to_owned(), read_only })
}

fn parse_long(ctx: &mut Ctx<'_>, mapping: &serde_yaml::Mapping, path: &Path) -> Option<ServiceVolume> {
    let mut kind = VolumeType::Volume;
    let mut source = None;
    let mut target = None;
    let mut read_only = false;
    for (key, val) in ctx.entries(mapping, path) {
        let at = path.key(key.clone());
        match key.as_str() {
            "type" => match ctx.string(val, &at).as_deref() {
                Some("volume") => kind = VolumeType::Volume,
                Some("bind") => kind = VolumeType::Bind,
                Some("tmpfs") => kind = VolumeType::Tmpfs,
                Some("npipe") => kind = VolumeType::Npipe,
                Some("image") => kind = VolumeType::Image,
                Some("cluster") => kind = VolumeType::Cluster,
                Some(other) => ctx
                    .error(&at, format!("volume type `{other}` must be volume, bind, tmpfs, npipe, image or cluster")),
                None => {}
            },
            "source" => source = ctx.string(val, &at),
            "target" => target = ctx.string(val, &at),
            "read_only" => read_only = ctx.bool(val, &at).unwrap_or(false),
            "bind" | "volume" | "tmpfs" | "image" => {
                ctx.mapping(val, &at);
            }
            "consistency" => {
                ctx.string(val, &at);
            }
            k if k.starts_with("x-") => {}
            k => ctx.warn(&at, format!("unknown volume key `{k}` is ignored")),
        }
    }
    let Some(target) = target else {
        ctx.error(path, "a long-syntax volume needs `target`");
        return None;
    };
    if !target.starts_with('/') && !ctx.is_deferred(&target) {
        ctx.error(&path.key("target"), format!("volume target `{target}` must be an absolute path in the container"));
    }
    if kind == VolumeType::Bind && source.is_none() {
        ctx.error(path, "a bind mount needs `source`");
    }
    Some(ServiceVolume { kind, source, target, read_only })
}

pub(crate) fn parse_volume(ctx: &mut Ctx<'_>, value: &Value, path: &Path) -> Option<ServiceVolume> {
    match untag(value) {
        Value::Mapping(mapping) => parse_long(ctx, mapping, path),
        other => {
            let text = ctx.string(other, path)?;
            if ctx.is_deferred(&text) {
                return None;
            }
            parse_short(&text).map_err(|message| ctx.error(path, message)).ok()
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn short_syntax() {
        let cases = [
            ("/data", VolumeType::Volume, None, "/data", false),
            ("/data:ro", VolumeType::Volume, None, "/data", true),
            (
                "db-data:/var/lib/postgresql/data",
                VolumeType::Volume,
                Some("db-data"),
                "/var/lib/postgresql/data",
                false,
            ),
            ("./src:/app:ro", VolumeType::Bind, Some("./src"), "/app", true),
            (
                "/var/run/docker.sock:/var/run/docker.sock",
                VolumeType::Bind,
                Some("/var/run/docker.sock"),
                "/var/run/docker.sock",
                false,
            ),
            ("~/cache:/cache:rw,z", VolumeType::Bind, Some("~/cache"), "/cache", false),
            ("cache:/cache:nocopy", VolumeType::Volume, Some("cache"), "/cache", false),
        ];
        for (input, kind, source, target, ro) in cases {
            let v = parse_short(input).unwrap_or_else(|e| panic!("{input}: {e}"));
            assert_eq!(
                (v.kind, v.source.as_deref(), v.target.as_str(), v.read_only),
                (kind, source, target, ro),
                "{input}"
            );
        }
        for input in ["data", "data:relative", "a:/b:bogus", ":/x", "a:/b:ro:extra"] {
            assert!(parse_short(input).is_err(), "{input:?} should fail");
        }
    }
}
