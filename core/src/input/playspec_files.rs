//! What `/api/playspecs/{id}/mounted_files` and `registry_credentials`
//! accepts: its request bodies and queries, and the checks that turn them,
//! field by field, into core's types (shared with server-side apply, which
//! validates the same fields the same way).

use crate::Result;
use crate::offload::Offload;
use play_model::FieldErrors;
use play_model::compose::{self, Policy};
use play_model::error::push_field_error;
use play_model::validate;
use play_store::Store;
use play_store::playspecs;
use serde::Deserialize;

/// The largest mounted file, in bytes.
pub const MAX_MOUNTED_FILE_BYTES: usize = 1024 * 1024;
/// Container paths a mounted file may not cover.
const RESERVED_PREFIXES: &[&str] = &["/proc", "/sys", "/dev"];
pub const REGISTRY_TYPES: &[&str] = &["docker_hub", "ghcr", "gitlab", "generic"];

pub fn check_mount_path(path: &str) -> Result<(), &'static str> {
    validate::absolute_path(path)?;
    if path == "/" || path.ends_with('/') || path.len() > 1024 {
        return Err("must name a file: an absolute path not ending in '/'");
    }
    if RESERVED_PREFIXES.iter().any(|p| path == *p || path.starts_with(&format!("{p}/"))) {
        return Err("must not be under /proc, /sys or /dev");
    }
    Ok(())
}

/// The services named in the Playspec's Compose text.
pub async fn service_names(
    store: &Store,
    cpu: &impl Offload,
    account_id: i64,
    playspec_id: i64,
) -> Result<Vec<String>> {
    let playspec = playspecs::get(store, account_id, playspec_id).await?;
    let yaml = playspec.base_compose_yaml;
    let (_, model) = cpu.run(move || compose::parse_compose(&yaml, &Policy::TRUSTED)).await?;
    Ok(model.map(|m| m.services.keys().cloned().collect()).unwrap_or_default())
}

pub fn check_targets(targets: &[String], known: &[String], errors: &mut FieldErrors) {
    for (i, t) in targets.iter().enumerate() {
        if !known.contains(t) {
            push_field_error(errors, format!("target_services[{i}]"), format!("no service {t:?} in the Playspec"));
        }
    }
}

pub fn parse_bool(text: &str) -> Option<bool> {
    match text.trim() {
        "true" | "1" => Some(true),
        "false" | "0" => Some(false),
        _ => None,
    }
}

/// A project path from a request, normalised; `None` (with an error) when
/// it is not one.
pub fn project_path(text: &str, errors: &mut FieldErrors) -> Option<String> {
    compose::project_files::normalise_file_path(text).map_err(|e| push_field_error(errors, "path", e.to_string())).ok()
}

/// A file name from an upload: its last path segment, if that is usable.
pub fn file_name(raw: Option<&str>) -> Result<String, &'static str> {
    let name = raw.unwrap_or("").rsplit(['/', '\\']).next().unwrap_or("").trim();
    if name.is_empty() || name == "." || name == ".." || name.chars().any(char::is_control) || name.len() > 255 {
        Err("the file part needs a file name")
    } else {
        Ok(name.to_owned())
    }
}

/// The multipart form of add_mounted_file (documentation: the handler reads
/// the parts one by one).
#[derive(Debug, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
#[serde(deny_unknown_fields)]
pub struct MountedFileUpload {
    /// The file, at most 1 MiB, with a file name.
    #[cfg_attr(feature = "openapi", schema(value_type = String, format = Binary))]
    pub file: Vec<u8>,
    /// Where the file appears in the containers: an absolute path of a
    /// file, not under /proc, /sys or /dev, at most 1024 bytes.
    #[cfg_attr(feature = "openapi", schema(schema_with = mount_path))]
    pub mount_path: String,
    /// The file's path in the Compose project (`nginx/nginx.conf`, or as
    /// the Compose file writes it, `./nginx/nginx.conf`): a relative bind
    /// source, or a secret's or config's relative `file:`, that names it
    /// (or a folder above it) gets this file. Relative, without `..`.
    #[serde(default)]
    #[cfg_attr(feature = "openapi", schema(max_length = 1024))]
    pub path: Option<String>,
    /// Services of the Playspec that get the file (repeat the part); all
    /// when none.
    #[serde(rename = "target_services[]", default)]
    pub target_services: Vec<String>,
    /// `true` or `false` (or `1`, `0`); default true.
    #[serde(default)]
    pub readonly: bool,
}

/// An absolute path (see `check_mount_path`) that names a file.
#[cfg(feature = "openapi")]
pub fn mount_path() -> utoipa::openapi::Schema {
    let path =
        utoipa::openapi::schema::ObjectBuilder::from(play_model::openapi::absolute_path()).max_length(Some(1024));
    let file = utoipa::openapi::schema::ObjectBuilder::new()
        .schema_type(utoipa::openapi::schema::Type::String)
        .pattern(Some("[^/]$"));
    utoipa::openapi::schema::AllOfBuilder::new().item(path).item(file).into()
}

#[derive(Debug, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
#[serde(deny_unknown_fields)]
pub struct UpdateMountedFile {
    pub mounted_file_id: i64,
    /// As in add_mounted_file.
    #[cfg_attr(feature = "openapi", schema(schema_with = mount_path_or_null))]
    pub mount_path: Option<String>,
    pub target_services: Option<Vec<String>>,
    pub readonly: Option<bool>,
    /// As in add_mounted_file; `""` removes the file's project path.
    #[cfg_attr(feature = "openapi", schema(max_length = 1024))]
    pub path: Option<String>,
}

#[cfg(feature = "openapi")]
pub fn mount_path_or_null() -> utoipa::openapi::Schema {
    utoipa::openapi::schema::AnyOfBuilder::new()
        .item(mount_path())
        .item(utoipa::openapi::schema::ObjectBuilder::new().schema_type(utoipa::openapi::schema::Type::Null))
        .into()
}

#[derive(Debug, Deserialize)]
pub struct MountedFileQuery {
    pub mounted_file_id: i64,
}

#[derive(Debug, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
#[serde(deny_unknown_fields)]
pub struct AddCredential {
    /// docker_hub, ghcr, gitlab or generic.
    #[cfg_attr(feature = "openapi", schema(schema_with = registry_type))]
    pub registry_type: String,
    /// The registry's host, with an optional port: `ghcr.io`, `registry.example.com:5000`.
    pub registry_url: String,
    /// 1-255 bytes, not blank.
    #[cfg_attr(feature = "openapi", schema(schema_with = username))]
    pub username: String,
    /// Password or token, 1-8192 bytes. Write-only.
    #[cfg_attr(feature = "openapi", schema(min_length = 1, max_length = 8192))]
    pub secret: String,
}

#[cfg(feature = "openapi")]
pub fn registry_type() -> utoipa::openapi::schema::Object {
    play_model::openapi::one_of(REGISTRY_TYPES)
}

#[cfg(feature = "openapi")]
pub fn username() -> utoipa::openapi::schema::Object {
    play_model::openapi::not_blank(255)
}

/// `https://host:port/` -> `host:port`; `None` when not a registry address.
pub fn registry_host(url: &str) -> Option<String> {
    let bare = url.trim().trim_start_matches("https://").trim_start_matches("http://").trim_end_matches('/');
    let (host, port) = match bare.rsplit_once(':') {
        Some((h, p)) if !h.contains(']') || bare.starts_with('[') => (h, Some(p)),
        _ => (bare, None),
    };
    let port_ok = port.is_none_or(|p| p.parse::<u16>().is_ok_and(|n| n > 0));
    (validate::host(host.trim_matches(['[', ']'])).is_ok() && port_ok && !bare.contains('/'))
        .then(|| bare.to_ascii_lowercase())
}

#[derive(Debug, Deserialize)]
pub struct CredentialQuery {
    pub credential_id: i64,
}

#[cfg(test)]
pub mod tests {
    use super::*;

    #[test]
    fn registry_hosts() {
        assert_eq!(registry_host("https://ghcr.io/").as_deref(), Some("ghcr.io"));
        assert_eq!(registry_host("127.0.0.1:5000").as_deref(), Some("127.0.0.1:5000"));
        assert_eq!(registry_host("Registry.Example.com").as_deref(), Some("registry.example.com"));
        for bad in ["", "ghcr.io/owner", "host:99999", "a b"] {
            assert_eq!(registry_host(bad), None, "{bad}");
        }
    }

    #[test]
    fn mount_paths() {
        assert!(check_mount_path("/etc/app/config.yml").is_ok());
        for bad in ["/", "etc/x", "/a/../b", "/proc/x", "/dev", "/app/"] {
            assert!(check_mount_path(bad).is_err(), "{bad}");
        }
    }

    #[test]
    fn upload_file_names() {
        assert_eq!(file_name(Some("dir/config.yml")).unwrap(), "config.yml");
        assert_eq!(file_name(Some("C:\\x\\a.env")).unwrap(), "a.env");
        assert!(file_name(Some("..")).is_err());
        assert!(file_name(None).is_err());
    }
}
