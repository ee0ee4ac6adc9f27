//! Relative paths in a Compose file and the files that provide them.
//!
//! Docker Compose reads a relative path (`./nginx.conf:/etc/nginx/nginx.conf`,
//! `source: conf/app` in a long-syntax bind, `secrets.db.file:
//! ./db_password.txt`) from the project directory on the machine that runs
//! it. play has no project directory on a Playroom, and the host's
//! filesystem is not the tenant's to read. A relative path is therefore
//! resolved against the Playspec's mounted files that carry a project path
//! (the `path` given at upload, stored normalised):
//!
//! - a path is normalised by dropping `.` segments and empty segments
//!   (`./a//b` is `a/b`, `.` is the project itself); a `..` segment
//!   anywhere, an absolute path, `~` and backslashes are never a project
//!   path, so nothing can climb out of the project by construction;
//! - a file whose path equals the normalised path provides it at the
//!   Compose target;
//! - for a bind (which may name a folder), every file under the path as a
//!   folder (`conf/` for `./conf`, every file for `.`) provides itself at
//!   the same place under the target (`conf/a/b.ini` at `<target>/a/b.ini`);
//!   an exact file wins over a folder of the same name;
//! - otherwise the path is [`Resolution::Unresolved`]: when the Compose
//!   file builds a service from a Playzone, the repository provides it at
//!   the Playground's commit (`crate::desired::source`); without one it
//!   is refused on an untrusted Playroom (`check`) and passed through
//!   unchanged on a trusted one.
//!
//! Resolution is pure and generic over the file type, so the validator
//! (which only knows the paths) and the desired state (which needs the
//! mounted files) answer from the same rules.

use super::ctx::Ctx;
use super::limits::MAX_MOUNTS;
use super::model::{ComposeFile, FileObject, ObjectRef, VolumeType};
use super::path::Path;

/// The longest project path, in bytes (as a mounted file's `mount_path`).
pub const MAX_PROJECT_PATH_BYTES: usize = 1024;

/// Why a path is not a project path.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum PathError {
    /// Starts at a root: `/x`, `~/x`, `C:\x`, `\\server`.
    Absolute,
    /// Has a `..` segment.
    Climbs,
    /// Empty, too long, or holds a backslash or a control character.
    Malformed,
}

impl std::fmt::Display for PathError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(match self {
            PathError::Absolute => "is absolute; a project path is relative to the Compose file",
            PathError::Climbs => "has a `..` segment; a project path stays inside the project",
            PathError::Malformed => {
                "must be a relative path of at most 1024 bytes with `/` separators, without control characters"
            }
        })
    }
}

/// True when `path` starts at a root (Unix, home or Windows).
pub fn is_absolute(path: &str) -> bool {
    path.starts_with(['/', '~', '\\']) || (path.len() >= 2 && path.as_bytes()[1] == b':')
}

/// The normal form of a project path: segments joined by `/`, without `.`
/// or empty segments; `""` is the project itself (`.` or `./`).
pub fn normalise(path: &str) -> Result<String, PathError> {
    if is_absolute(path) {
        return Err(PathError::Absolute);
    }
    if path.is_empty()
        || path.len() > MAX_PROJECT_PATH_BYTES
        || path.contains('\\')
        || path.chars().any(char::is_control)
    {
        return Err(PathError::Malformed);
    }
    let mut parts = Vec::new();
    for part in path.split('/') {
        match part {
            "" | "." => {}
            ".." => return Err(PathError::Climbs),
            other => parts.push(other),
        }
    }
    Ok(parts.join("/"))
}

/// The normal form of a file's project path given at upload: as
/// [`normalise`], and it must name a file, not the project.
pub fn normalise_file_path(path: &str) -> Result<String, PathError> {
    normalise(path).and_then(|p| if p.is_empty() { Err(PathError::Malformed) } else { Ok(p) })
}

/// Whether two files' project paths cannot both exist: the same path, or
/// one a folder of the other (`conf` and `conf/a.ini`), which would make a
/// bind of `./conf` ambiguous.
pub fn paths_conflict(a: &str, b: &str) -> bool {
    let under = |inner: &str, outer: &str| inner.strip_prefix(outer).is_some_and(|rest| rest.starts_with('/'));
    a == b || under(a, b) || under(b, a)
}

/// Whether a path may name a folder (a bind) or only a file (a secret or
/// config).
#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Expect {
    File,
    FileOrFolder,
}

/// One file placed in the container.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Placed<'f, F> {
    pub file: &'f F,
    /// The absolute path in the container.
    pub target: String,
}

/// What provides a relative path of the Compose file.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Resolution<'f, F> {
    /// Mounted files of the Playspec (at least one).
    MountedFiles(Vec<Placed<'f, F>>),
    /// No mounted file provides it; holds the normalised path (which a
    /// Playzone's repository may provide: see [`check`]).
    Unresolved(String),
}

/// Resolves the normalised `path` for `target` against `files`, whose
/// project paths `path_of` gives (normalised; `None` for a file without
/// one). Files come out in the order of `files`.
pub fn resolve<'f, F>(
    path: &str,
    target: &str,
    expect: Expect,
    files: &'f [F],
    path_of: impl Fn(&F) -> Option<&str>,
) -> Resolution<'f, F> {
    if let Some(file) = files.iter().find(|f| !path.is_empty() && path_of(f) == Some(path)) {
        return Resolution::MountedFiles(vec![Placed { file, target: target.to_owned() }]);
    }
    if expect == Expect::File {
        return Resolution::Unresolved(path.to_owned());
    }
    let base = target.trim_end_matches('/');
    let placed: Vec<Placed<'f, F>> = files
        .iter()
        .filter_map(|file| {
            let own = path_of(file)?;
            let rest = if path.is_empty() { own } else { own.strip_prefix(path)?.strip_prefix('/')? };
            Some(Placed { file, target: format!("{base}/{rest}") })
        })
        .collect();
    if placed.is_empty() { Resolution::Unresolved(path.to_owned()) } else { Resolution::MountedFiles(placed) }
}

/// Where a service sees a secret or config: `target` if absolute, else
/// under `/run/secrets/` for secrets and `/` for configs, named by
/// `target` or the top-level name (Docker Compose's defaults).
pub fn object_target(kind: ObjectKind, used: &ObjectRef) -> String {
    let name = used.target.as_deref().unwrap_or(&used.source);
    if name.starts_with('/') {
        return name.to_owned();
    }
    match kind {
        ObjectKind::Secret => format!("/run/secrets/{name}"),
        ObjectKind::Config => format!("/{name}"),
    }
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ObjectKind {
    Secret,
    Config,
}

impl ObjectKind {
    /// The top-level key.
    pub fn key(self) -> &'static str {
        match self {
            ObjectKind::Secret => "secrets",
            ObjectKind::Config => "configs",
        }
    }
}

/// A relative source of the Compose file: where it is, the path as
/// written, what it must be and where the service sees it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RelativeSource<'m> {
    pub service: &'m str,
    /// The Compose path of the entry (`services.web.volumes[0]`,
    /// `secrets.db.file`).
    pub(crate) at: Path,
    pub written: &'m str,
    pub expect: Expect,
    pub target: String,
    pub read_only: bool,
    /// The index in the service's `volumes` for a bind; `None` for a
    /// secret or config.
    pub volume: Option<usize>,
}

impl RelativeSource<'_> {
    /// The Compose path of the entry, as issues print it.
    pub fn location(&self) -> String {
        self.at.to_string()
    }
}

/// Every relative source `file` uses, service by service in document
/// order: binds with a relative source, then the secrets and configs the
/// service uses whose top-level definition reads a relative `file:`.
pub fn relative_sources(file: &ComposeFile) -> Vec<RelativeSource<'_>> {
    let mut out = Vec::new();
    for (name, service) in &file.services {
        let at = Path::root().key("services").key(name.clone());
        for (i, volume) in service.volumes.iter().enumerate() {
            if let (VolumeType::Bind, Some(source)) = (volume.kind, volume.source.as_deref())
                && !is_absolute(source)
            {
                out.push(RelativeSource {
                    service: name,
                    at: at.key("volumes").index(i),
                    written: source,
                    expect: Expect::FileOrFolder,
                    target: volume.target.clone(),
                    read_only: volume.read_only,
                    volume: Some(i),
                });
            }
        }
        for (kind, used, defined) in [
            (ObjectKind::Secret, &service.secrets, &file.secrets),
            (ObjectKind::Config, &service.configs, &file.configs),
        ] {
            for object in used {
                let Some(FileObject { file: Some(source), .. }) = defined.get(&object.source) else { continue };
                if is_absolute(source) {
                    continue;
                }
                out.push(RelativeSource {
                    service: name,
                    at: Path::root().key(kind.key()).key(object.source.clone()).key("file"),
                    written: source,
                    expect: Expect::File,
                    target: object_target(kind, object),
                    read_only: true,
                    volume: None,
                });
            }
        }
    }
    out
}

/// The message for a relative path nothing provides: the path and how to
/// provide it.
pub fn unresolved_message(written: &str, normalised: &str, expect: Expect) -> String {
    let how = match (expect, normalised.is_empty()) {
        (_, true) => "each file of the project with its path (`path`)".to_owned(),
        (Expect::File, false) => format!("with path `{normalised}`"),
        (Expect::FileOrFolder, false) => {
            format!("with path `{normalised}`, or for a folder each of its files with a path under `{normalised}/`")
        }
    };
    format!(
        "`{written}` is a path in the Compose project, which play does not have on the Playroom: upload it as a \
         mounted file of the Playspec (POST /api/playspecs/:id/add_mounted_file {how}), or build a service of \
         this Compose file from a Playzone (`build:`): its repository then provides the path at the \
         Playground's commit"
    )
}

/// Checks every relative source of `file` against the project paths of
/// the Playspec's mounted files (normalised). On an untrusted Playroom a
/// path that is not a project path is refused (the untrusted policy
/// refuses every other host path), and so is one that nothing provides
/// unless the file has a repository (its Playspec names a Playzone, or a
/// service is built from one): then the repository
/// provides it at the Playground's commit, which only the reconciler
/// reads (a missing secret or config file fails the Playground there,
/// naming the path). On a trusted Playroom both pass through as before.
/// Under every policy the files one service gets from mounted files are
/// bounded by [`MAX_MOUNTS`].
pub(crate) fn check(file: &ComposeFile, policy: &super::Policy, ctx: &mut Ctx<'_>) {
    let (project_files, trusted) = (policy.project_files.as_slice(), policy.trusted);
    let repository = policy.repository || file.services.values().any(|s| s.is_built_from_source());
    let mut per_service: Vec<(&str, usize)> = Vec::new();
    let mut reported: Vec<Path> = Vec::new();
    for source in relative_sources(file) {
        let at = source.at.clone();
        // A secret or config used by several services is one entry.
        if reported.contains(&at) {
            continue;
        }
        let normalised = match normalise(source.written) {
            Ok(path) => path,
            Err(e) if !trusted => {
                ctx.error(&at, format!("`{}` {e}; it is not allowed on an untrusted Playroom", source.written));
                reported.push(at);
                continue;
            }
            Err(_) => continue,
        };
        match resolve(&normalised, &source.target, source.expect, project_files, |p| Some(p.as_str())) {
            Resolution::MountedFiles(placed) => match per_service.iter_mut().find(|(s, _)| *s == source.service) {
                Some((_, n)) => *n += placed.len(),
                None => per_service.push((source.service, placed.len())),
            },
            Resolution::Unresolved(path) if !trusted && !repository => {
                ctx.error(&at, unresolved_message(source.written, &path, source.expect));
                reported.push(at);
            }
            Resolution::Unresolved(_) => {}
        }
    }
    for (service, count) in per_service.into_iter().filter(|(_, n)| *n > MAX_MOUNTS) {
        ctx.error(
            &Path::root().key("services").key(service),
            format!("{count} mounted files from relative paths; the limit is {MAX_MOUNTS} per service"),
        );
    }
}

#[cfg(test)]
#[path = "project_files_tests.rs"]
mod tests;
