//! Contexts: named (server URL, token) pairs in
//! `$XDG_CONFIG_HOME/play/config.toml` (default `~/.config/play/`), one of
//! them current.
//!
//! Invariants: the file is written whole to a temporary file with mode
//! 0600 and renamed over the old one, so it is never readable by others,
//! even for a moment, and never half-written; the directory is created
//! 0700. `PLAY_URL` and `PLAY_TOKEN` override the selected context's URL
//! and token (each its own part), so a CI job needs no file at all.

use std::collections::BTreeMap;
use std::fmt;
use std::io::Write as _;
use std::os::unix::fs::{DirBuilderExt as _, OpenOptionsExt as _};
use std::path::{Path, PathBuf};

use anyhow::{Context as _, bail};
use serde::{Deserialize, Serialize};

/// The contexts file.
#[derive(Debug, Default, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct ConfigFile {
    /// The context used when none is selected.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub current: Option<String>,
    #[serde(default)]
    pub contexts: BTreeMap<String, StoredContext>,
}

#[derive(Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct StoredContext {
    /// The server's root URL (`https://play.example.com`).
    pub url: String,
    pub token: String,
}

impl fmt::Debug for StoredContext {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("StoredContext").field("url", &self.url).finish_non_exhaustive()
    }
}

/// The server a command talks to.
#[derive(Clone, PartialEq, Eq)]
pub struct Target {
    pub url: String,
    pub token: String,
    /// The context it came from, if any.
    pub context: Option<String>,
}

impl fmt::Debug for Target {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Target").field("url", &self.url).field("context", &self.context).finish_non_exhaustive()
    }
}

/// Where the contexts file is: `$XDG_CONFIG_HOME/play/config.toml`, else
/// `$HOME/.config/play/config.toml`.
pub fn config_path(xdg_config_home: Option<&str>, home: Option<&str>) -> anyhow::Result<PathBuf> {
    let base = match (xdg_config_home.filter(|s| !s.is_empty()), home.filter(|s| !s.is_empty())) {
        (Some(xdg), _) => PathBuf::from(xdg),
        (None, Some(home)) => Path::new(home).join(".config"),
        (None, None) => bail!("neither XDG_CONFIG_HOME nor HOME is set: cannot find the contexts file"),
    };
    Ok(base.join("play").join("config.toml"))
}

/// The contexts file of this process's environment.
pub fn default_path() -> anyhow::Result<PathBuf> {
    config_path(std::env::var("XDG_CONFIG_HOME").ok().as_deref(), std::env::var("HOME").ok().as_deref())
}

impl ConfigFile {
    /// Reads `path`; a missing file is an empty configuration.
    pub fn load(path: &Path) -> anyhow::Result<ConfigFile> {
        match std::fs::read_to_string(path) {
            Ok(text) => {
                toml::from_str(&text).with_context(|| format!("{} is not a valid contexts file", path.display()))
            }
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(ConfigFile::default()),
            Err(e) => Err(e).with_context(|| format!("cannot read {}", path.display())),
        }
    }

    /// Writes the file with mode 0600 (see the module documentation).
    pub fn save(&self, path: &Path) -> anyhow::Result<()> {
        let dir = path.parent().context("the contexts file has no directory")?;
        std::fs::DirBuilder::new()
            .recursive(true)
            .mode(0o700)
            .create(dir)
            .with_context(|| format!("cannot create {}", dir.display()))?;
        let text = toml::to_string(self).context("cannot write the contexts")?;
        let tmp = dir.join(format!(".config.toml.{}.tmp", std::process::id()));
        let write = || -> std::io::Result<()> {
            let mut file = std::fs::OpenOptions::new().write(true).create_new(true).mode(0o600).open(&tmp)?;
            file.write_all(text.as_bytes())?;
            file.sync_all()?;
            std::fs::rename(&tmp, path)
        };
        write()
            .inspect_err(|_| {
                let _ = std::fs::remove_file(&tmp);
            })
            .with_context(|| format!("cannot write {}", path.display()))
    }

    /// The server to talk to: the context named `selected` (else the
    /// current one), with `env_url` / `env_token` (`PLAY_URL`,
    /// `PLAY_TOKEN`) overriding its parts.
    pub fn target(
        &self,
        selected: Option<&str>,
        env_url: Option<String>,
        env_token: Option<String>,
    ) -> anyhow::Result<Target> {
        let name = selected.map(str::to_owned).or_else(|| self.current.clone());
        let stored = match &name {
            Some(name) => match self.contexts.get(name) {
                Some(stored) => Some(stored),
                None if selected.is_some() || env_url.is_none() || env_token.is_none() => {
                    bail!("no context named {name:?} (see `play config get-contexts`)")
                }
                None => None,
            },
            None => None,
        };
        let url = env_url.filter(|s| !s.is_empty()).or_else(|| stored.map(|s| s.url.clone()));
        let token = env_token.filter(|s| !s.is_empty()).or_else(|| stored.map(|s| s.token.clone()));
        match (url, token) {
            (Some(url), Some(token)) => Ok(Target { url: normalize_url(&url)?, token, context: stored.and(name) }),
            _ => bail!("not logged in: run `play login URL --token-stdin`, or set PLAY_URL and PLAY_TOKEN"),
        }
    }
}

/// The server's root URL from what a user typed: scheme required, a
/// trailing `/` or `/api` dropped.
pub fn normalize_url(url: &str) -> anyhow::Result<String> {
    let url = url.trim();
    if !(url.starts_with("http://") || url.starts_with("https://")) {
        bail!("the server URL must start with http:// or https:// (got {url:?})");
    }
    let trimmed = url.trim_end_matches('/');
    let trimmed = trimmed.strip_suffix("/api").unwrap_or(trimmed);
    Ok(trimmed.to_owned())
}

/// A context name for `url` when login is given none: its host and port.
pub fn name_for(url: &str) -> String {
    let rest = url.split_once("://").map_or(url, |(_, rest)| rest);
    let host = rest.split('/').next().unwrap_or(rest);
    host.chars().map(|c| if c.is_ascii_alphanumeric() || ".-_:".contains(c) { c } else { '-' }).collect()
}

#[cfg(test)]
mod tests {
    use std::os::unix::fs::PermissionsExt as _;

    use super::*;

    fn file() -> ConfigFile {
        let mut contexts = BTreeMap::new();
        contexts.insert("prod".to_owned(), StoredContext { url: "https://prod".into(), token: "tok_prod".into() });
        contexts.insert("dev".to_owned(), StoredContext { url: "http://dev:8080".into(), token: "tok_dev".into() });
        ConfigFile { current: Some("dev".into()), contexts }
    }

    #[test]
    fn the_path_follows_xdg_then_home() {
        assert_eq!(config_path(Some("/x"), Some("/h")).unwrap(), PathBuf::from("/x/play/config.toml"));
        assert_eq!(config_path(Some(""), Some("/h")).unwrap(), PathBuf::from("/h/.config/play/config.toml"));
        assert!(config_path(None, None).is_err());
    }

    #[test]
    fn saved_files_are_0600_in_a_0700_directory_and_read_back() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("cfg").join("play").join("config.toml");
        file().save(&path).unwrap();
        let mode = std::fs::metadata(&path).unwrap().permissions().mode() & 0o777;
        assert_eq!(mode, 0o600);
        let dir_mode = std::fs::metadata(path.parent().unwrap()).unwrap().permissions().mode() & 0o777;
        assert_eq!(dir_mode, 0o700);
        assert_eq!(ConfigFile::load(&path).unwrap(), file());
        // Saved again over an existing file: still 0600, no temporary left.
        file().save(&path).unwrap();
        assert_eq!(std::fs::read_dir(path.parent().unwrap()).unwrap().count(), 1);
        assert_eq!(ConfigFile::load(&dir.path().join("missing.toml")).unwrap(), ConfigFile::default());
    }

    #[test]
    fn the_current_context_is_used_unless_one_is_selected() {
        let t = file().target(None, None, None).unwrap();
        assert_eq!(
            (t.url.as_str(), t.token.as_str(), t.context.as_deref()),
            ("http://dev:8080", "tok_dev", Some("dev"))
        );
        let t = file().target(Some("prod"), None, None).unwrap();
        assert_eq!((t.url.as_str(), t.token.as_str()), ("https://prod", "tok_prod"));
        let err = file().target(Some("nope"), None, None).unwrap_err().to_string();
        assert!(err.contains("no context named \"nope\""), "{err}");
    }

    #[test]
    fn environment_variables_override_each_their_part() {
        let t = file().target(None, None, Some("envtoken".into())).unwrap();
        assert_eq!((t.url.as_str(), t.token.as_str()), ("http://dev:8080", "envtoken"));
        let t = file().target(None, Some("http://other/api/".into()), None).unwrap();
        assert_eq!((t.url.as_str(), t.token.as_str()), ("http://other", "tok_dev"));
        // No file at all: both variables are enough.
        let t = ConfigFile::default().target(None, Some("http://ci".into()), Some("t".into())).unwrap();
        assert_eq!((t.url.as_str(), t.context), ("http://ci", None));
        let err = ConfigFile::default().target(None, Some("http://ci".into()), None).unwrap_err().to_string();
        assert!(err.contains("not logged in"), "{err}");
    }

    #[test]
    fn debug_output_hides_tokens() {
        let shown = format!("{:?} {:?}", file(), file().target(None, None, None).unwrap());
        assert!(!shown.contains("tok_"), "{shown}");
    }

    #[test]
    fn urls_are_normalised_and_named() {
        assert_eq!(normalize_url("https://p.example.com/api/").unwrap(), "https://p.example.com");
        assert!(normalize_url("p.example.com").is_err());
        assert_eq!(name_for("http://127.0.0.1:8080"), "127.0.0.1:8080");
    }
}
