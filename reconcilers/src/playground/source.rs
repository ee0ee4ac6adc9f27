//! Source volumes (`svc/source_mount`) on the host: the branch's files at
//! the service's pinned commit, in the volume the desired state names
//! (`play_model::desired` `source`), before the service runs.
//!
//! # Where the files come from
//!
//! The repository's root (or the folder a relative bind names) at the
//! pinned commit, as a tar archive the `RepositoryGateway` writes to a
//! spool file (`super::context::Spool`, bounded by [`MAX_CONTEXT_BYTES`],
//! charged to the account's bytes in flight) and the upload streams from
//! disk: one file of the tree is in play's memory at a time (issue #27,
//! item 6). A single file a bind names is read whole, bounded the same.
//! Never a host path: a checkout a tenant container could write is
//! nothing play may read later. Play never reads the volume back (but for
//! its marker) and never follows a link inside it: the engine extracts
//! links as links.
//!
//! # How a complete fill is known
//!
//! Volumes cannot be relabelled, and a volume cannot be filled under a
//! temporary name and renamed, so completeness is a file: the upload is
//! one archive, the repository's entries followed by a last entry
//! [`MARKER`] holding the commit id. The engine extracts an archive in
//! order, so the marker exists only if everything before it was written.
//! A pass checks it with a second never-started [`Helper`] that downloads
//! that one path ([`complete`]), once per volume while this process runs
//! ([`Completed`]); a missing or different marker (a crash
//! mid-upload, a volume the engine made empty for a mount) means: fill
//! again. Filling again is harmless (the same commit's files over the
//! same files). A repository entry at (or under) the marker's path is
//! left out, so a repository cannot forge completeness.
//!
//! The volume is written only through the helper, which mounts it with
//! `nocopy` and never runs (see [`super::helper`]); the service's own
//! container mounts it read-write: what the service does in it is its
//! business, since play reads nothing but the marker and a new commit
//! gets a new volume.

use std::collections::BTreeSet;
use std::io::Read as _;

use bollard::Docker;
use bollard::models::{Mount, MountTypeEnum};
use play_model::build::MAX_CONTEXT_BYTES;
use play_model::build::dockerignore::Rules;
use play_model::compose::project_files::Expect;
use play_model::desired::{CONTENT, SourceLayout, SourceMount};
use play_model::repository::{ArchiveOptions, RepositoryError, TreeEntry};
use play_store::playzone_access;

use super::build::Builder;
use super::context::Spool;
use super::helper::{self, Helper};
use super::plan::Observed;
use super::spec::{Desired, ServiceSpec};
use crate::{Error, Result};

/// The file whose presence, holding the commit id, says a fill completed.
pub const MARKER: &str = ".play-source-complete";
/// Where helpers mount a source volume.
const HELPER_DIR: &str = "/play-source";
const ROLE: &str = "source-helper";

/// Fills every source volume of `service` with its commit's files and,
/// last, the marker. The volumes exist (the plan creates them first) and
/// the service's image is on the host (the helper is made from it).
pub async fn fill(docker: &Docker, builder: &Builder<'_>, service: &ServiceSpec) -> Result<()> {
    if service.sources.is_empty() {
        return Err(Error::InvalidSpec(format!("service `{}` mounts no repository files", service.name)));
    }
    for source in &service.sources {
        // Held while the tree is spooled and sent (`super::slots`).
        let slot = builder.slots.acquire(builder.playroom_id, builder.account_id).await;
        let access = playzone_access::access(builder.store, builder.secrets, source.playzone_id).await?;
        let spool = Spool::new(builder.spool_dir, builder.playground_id)
            .await
            .map_err(|e| Error::Files(format!("creating a spool file in {}: {e}", builder.spool_dir.display())))?;
        let mut options = ArchiveOptions {
            last: Some((MARKER.to_owned(), source.commit.clone().into_bytes())),
            budget: Some(slot.budget()),
            ..ArchiveOptions::default()
        };
        let spooled = match source.layout {
            SourceLayout::Root => {
                options.rules = marker_rules()?;
                builder
                    .repositories
                    .archive_to_file(&access, &source.commit, "", MAX_CONTEXT_BYTES, options, spool.path.clone())
                    .await
            }
            SourceLayout::Entry { .. } => {
                options.prefix = CONTENT.to_owned();
                builder
                    .repositories
                    .archive_to_file(
                        &access,
                        &source.commit,
                        &source.path,
                        MAX_CONTEXT_BYTES,
                        options,
                        spool.path.clone(),
                    )
                    .await
            }
        };
        let refused = |why: String| Error::InvalidSpec(format!("service `{}`: {why}", service.name));
        let upload = match (spooled, source.layout) {
            (Ok(_), SourceLayout::Entry { expect: Expect::File }) => return Err(refused(folder_for_a_file(source))),
            (Ok(_), _) => Upload::Spooled(spool),
            // Not a folder: a file, a link, or nothing, read as they are.
            (Err(RepositoryError::NotFound(_)), SourceLayout::Entry { expect }) => {
                let found = builder
                    .repositories
                    .entry(&access, &source.commit, &source.path, MAX_CONTEXT_BYTES)
                    .await
                    .map_err(Error::Repository)?;
                if let TreeEntry::File { contents, .. } = &found
                    && !slot.budget().take(contents.len() as u64)
                {
                    return Err(Error::Repository(RepositoryError::Busy(
                        "the account's build contexts and source fills in flight are at their bound".into(),
                    )));
                }
                Upload::Memory(entry_archive(found, expect, source).map_err(refused)??)
            }
            (Err(e), _) => return Err(Error::Repository(e)),
        };
        let labels = helper::labels(builder.installation, builder.playground_id, ROLE);
        let helper =
            Helper::create(docker, "source", &service.container.image, &source.volume, HELPER_DIR, labels).await?;
        let uploaded = match &upload {
            Upload::Spooled(spool) => helper.upload_spool(HELPER_DIR, spool).await,
            Upload::Memory(archive) => helper.upload(HELPER_DIR, archive.clone()).await,
        };
        uploaded.and(helper.remove().await)?;
        tracing::info!(
            playground = builder.playground_id, service = %service.name, volume = %source.volume, path = %source.path,
            "source volume filled"
        );
    }
    Ok(())
}

/// A fill's archive: spooled (a folder), or a single file's, in memory.
enum Upload {
    Spooled(Spool),
    Memory(Vec<u8>),
}

/// Leaves out whatever a repository holds at (or under) the marker's path.
fn marker_rules() -> Result<Rules> {
    Rules::parse(MARKER).map_err(|e| Error::InvalidSpec(format!("the marker's rule: {e}")))
}

fn shown(source: &SourceMount) -> String {
    let short: String = source.commit.chars().take(12).collect();
    format!("`./{}` (branch {}, commit {short})", source.path, source.branch)
}

fn folder_for_a_file(source: &SourceMount) -> String {
    format!("{} is a folder in the repository; a secret or config is one file", shown(source))
}

/// The most complete fills [`Completed`] remembers; full, it starts over.
pub const MAX_COMPLETED: usize = 10_000;

/// The source volumes this process found complete, by (name, the engine's
/// `CreatedAt`, commit): a complete fill stays complete (only the helper
/// writes the marker, and nothing but the volume's removal undoes it;
/// one made again under the name has another `CreatedAt`), so it is
/// checked once, not by a helper container on every pass (issue #33).
#[derive(Debug, Default)]
pub struct Completed(std::sync::Mutex<std::collections::HashSet<(String, String, String)>>);

impl Completed {
    fn key(volume: &str, created: &str, commit: &str) -> Option<(String, String, String)> {
        // Without the engine's creation time a volume made again could not
        // be told apart: always checked.
        (!created.is_empty()).then(|| (volume.to_owned(), created.to_owned(), commit.to_owned()))
    }

    fn knows(&self, key: &Option<(String, String, String)>) -> bool {
        key.as_ref().is_some_and(|key| self.0.lock().is_ok_and(|known| known.contains(key)))
    }

    fn remember(&self, key: Option<(String, String, String)>) {
        if let (Some(key), Ok(mut known)) = (key, self.0.lock()) {
            if known.len() >= MAX_COMPLETED {
                known.clear();
            }
            known.insert(key);
        }
    }
}

/// The desired source volumes of `desired` whose fill completed. Only a
/// volume that exists and whose service's image is present can be
/// checked (the helper is made from that image); any other is not
/// complete. A volume several services use is checked once, and one
/// `known` to be complete not at all.
pub async fn complete(
    docker: &Docker,
    desired: &Desired,
    observed: &Observed,
    known: &Completed,
) -> Result<BTreeSet<String>> {
    let mut out = BTreeSet::new();
    let pairs: Vec<(&ServiceSpec, &SourceMount)> =
        desired.services.iter().flat_map(|s| s.sources.iter().map(move |src| (s, src))).collect();
    for (service, source) in pairs {
        if out.contains(&source.volume) || !observed.volumes.contains(&source.volume) {
            continue;
        }
        let created = observed.source_created.get(&source.volume).map(String::as_str).unwrap_or_default();
        let key = Completed::key(&source.volume, created, &source.commit);
        if known.knows(&key) {
            out.insert(source.volume.clone());
            continue;
        }
        if !observed.images.contains(&service.container.image) {
            continue;
        }
        let labels = helper::labels(&desired.installation, desired.playground_id, ROLE);
        let helper =
            Helper::create(docker, "source", &service.container.image, &source.volume, HELPER_DIR, labels).await?;
        let read = helper.download(&format!("{HELPER_DIR}/{MARKER}")).await;
        let removed = helper.remove().await;
        let done = read?.is_some_and(|archive| marks(&archive, &source.commit));
        removed?;
        if done {
            known.remember(key);
            out.insert(source.volume.clone());
        }
    }
    Ok(out)
}

/// The binds of `service`'s relative sources: each source volume's
/// [`CONTENT`] at its host path (see `play_model::desired::source` for why
/// that path cannot be a link: only the helper ever mounts the volume's
/// root, and the fill writes `content` itself as a file or a folder).
pub async fn binds(docker: &Docker, service: &ServiceSpec) -> Result<Vec<Mount>> {
    let mut out = Vec::with_capacity(service.container.source_binds.len());
    for bind in &service.container.source_binds {
        let mountpoint = docker
            .inspect_volume(&bind.volume)
            .await
            .map_err(|e| Error::docker("inspect a source volume", e))?
            .mountpoint;
        out.push(Mount {
            typ: Some(MountTypeEnum::BIND),
            source: Some(format!("{}/{CONTENT}", mountpoint.trim_end_matches('/'))),
            target: Some(bind.target.clone()),
            read_only: Some(bind.read_only),
            ..Default::default()
        });
    }
    Ok(out)
}

/// The upload of a relative source's volume: the repository's entry at
/// its path as [`CONTENT`], then the marker. A bind source the repository
/// lacks is an empty folder, as Docker Compose makes one for a missing
/// host path. The outer `Err` is terminal (what the Compose file asks
/// cannot be delivered); the inner one a packing failure.
fn entry_archive(
    found: TreeEntry,
    expect: Expect,
    source: &SourceMount,
) -> std::result::Result<Result<Vec<u8>>, String> {
    let at = shown(source);
    let err = |e: std::io::Error| Error::Files(format!("cannot pack the repository's files: {e}"));
    let mut out = tar::Builder::new(Vec::new());
    let dir = |out: &mut tar::Builder<Vec<u8>>| {
        let mut header = tar::Header::new_gnu();
        header.set_entry_type(tar::EntryType::Directory);
        header.set_mode(0o755);
        header.set_size(0);
        out.append_data(&mut header, format!("{CONTENT}/"), std::io::empty())
    };
    let packed = match found {
        TreeEntry::Link(link) => {
            return Err(format!(
                "{at} is a symbolic link in the repository (at `{link}`); play never follows links out of a \
                 checkout: name the link's target in the Compose file instead"
            ));
        }
        TreeEntry::Missing if expect == Expect::File => {
            return Err(format!("{at} is not a file in the repository: commit it, or change the Compose file's path"));
        }
        TreeEntry::Missing => dir(&mut out).map_err(err),
        TreeEntry::File { contents, executable } => {
            let mut header = tar::Header::new_gnu();
            header.set_entry_type(tar::EntryType::Regular);
            header.set_mode(if executable { 0o755 } else { 0o644 });
            header.set_size(contents.len() as u64);
            out.append_data(&mut header, CONTENT, contents.as_slice()).map_err(err)
        }
        TreeEntry::Directory(_) if expect == Expect::File => return Err(folder_for_a_file(source)),
        TreeEntry::Directory(tree) => {
            dir(&mut out).map_err(err).and_then(|()| repack(&tree, CONTENT, &mut out).map_err(Error::Files))
        }
    };
    Ok(packed
        .and_then(|()| append_marker(&mut out, &source.commit).map_err(Error::Files))
        .and_then(|()| out.into_inner().map_err(err)))
}

/// Copies the entries of `tree` into `out` under `prefix`, as they are (a
/// link stays a link), dropping global headers.
fn repack(tree: &[u8], prefix: &str, out: &mut tar::Builder<Vec<u8>>) -> std::result::Result<(), String> {
    let err = |e: std::io::Error| format!("cannot repack the repository's files: {e}");
    let mut reader = tar::Archive::new(tree);
    for entry in reader.entries().map_err(err)? {
        let mut entry = entry.map_err(err)?;
        let path = entry.path().map_err(err)?.into_owned();
        let kind = entry.header().entry_type();
        let path = std::path::Path::new(prefix).join(path);
        let mut header = entry.header().clone();
        match kind {
            tar::EntryType::XGlobalHeader | tar::EntryType::XHeader => continue,
            tar::EntryType::Symlink | tar::EntryType::Link => {
                let target = entry.link_name().map_err(err)?.map(|t| t.into_owned()).unwrap_or_default();
                out.append_link(&mut header, &path, &target).map_err(err)?;
            }
            _ => out.append_data(&mut header, &path, &mut entry).map_err(err)?,
        }
    }
    Ok(())
}

/// Appends the marker holding `commit`: the archive's last entry.
fn append_marker(out: &mut tar::Builder<Vec<u8>>, commit: &str) -> std::result::Result<(), String> {
    let mut header = tar::Header::new_gnu();
    header.set_entry_type(tar::EntryType::Regular);
    header.set_size(commit.len() as u64);
    header.set_mode(0o444);
    out.append_data(&mut header, MARKER, commit.as_bytes()).map_err(|e| format!("cannot write the marker: {e}"))
}

/// Whether the engine's archive of the marker's path holds the marker: one
/// regular file whose content is `commit`.
fn marks(archive: &[u8], commit: &str) -> bool {
    let mut reader = tar::Archive::new(archive);
    let Ok(mut entries) = reader.entries() else { return false };
    let Some(Ok(mut entry)) = entries.next() else { return false };
    if entry.header().entry_type() != tar::EntryType::Regular || entry.size() > 64 {
        return false;
    }
    let mut content = String::new();
    entry.read_to_string(&mut content).is_ok() && content == commit
}

#[cfg(test)]
mod tests {

    use super::super::helper::tar_of;
    use super::*;

    fn listing(archive: &[u8]) -> Vec<(String, tar::EntryType, String)> {
        let mut reader = tar::Archive::new(archive);
        reader
            .entries()
            .unwrap()
            .map(|e| {
                let mut e = e.unwrap();
                let path = e.path().unwrap().display().to_string();
                let kind = e.header().entry_type();
                let link = e.link_name().unwrap().map(|l| l.display().to_string());
                let mut data = String::new();
                e.read_to_string(&mut data).unwrap();
                (path, kind, link.unwrap_or(data))
            })
            .collect()
    }

    #[test]
    fn a_repositorys_own_marker_is_left_out_of_a_root_fill() {
        let rules = marker_rules().unwrap();
        assert!(rules.excludes(MARKER));
        assert!(rules.excludes(&format!("{MARKER}/inside")), "a folder at the marker's path, with what it holds");
        for kept in ["index.html", "deep/.play-source-complete", ".play-source-completely"] {
            assert!(!rules.excludes(kept), "{kept}");
        }
    }

    #[test]
    fn only_a_regular_marker_with_the_commit_marks_a_complete_fill() {
        use tar::EntryType::{Regular, Symlink};
        assert!(marks(&tar_of(&[(MARKER, Regular, b"abc123", None)]), "abc123"));
        assert!(!marks(&tar_of(&[(MARKER, Regular, b"abc124", None)]), "abc123"), "another commit's");
        assert!(!marks(&tar_of(&[(MARKER, Symlink, b"", Some("/etc/x"))]), "abc123"));
        assert!(!marks(b"not a tar", "abc123"));
    }

    fn entry_source(path: &str, expect: Expect) -> SourceMount {
        SourceMount {
            playzone_id: 1,
            branch: "main".into(),
            commit: "abc123".repeat(7)[..40].to_owned(),
            path: path.into(),
            layout: SourceLayout::Entry { expect },
            key: "_src-_k".into(),
            volume: "p__src-_k".into(),
            mount_path: "/x".into(),
            read_only: true,
        }
    }

    fn packed(found: TreeEntry, expect: Expect) -> std::result::Result<Vec<(String, tar::EntryType, String)>, String> {
        let source = entry_source("conf/app.ini", expect);
        entry_archive(found, expect, &source).map(|r| listing(&r.unwrap()))
    }

    #[test]
    fn an_entry_is_packed_as_content_with_the_marker_last() {
        use tar::EntryType::{Directory, Regular, Symlink};
        let commit = entry_source("", Expect::File).commit;
        let file = TreeEntry::File { contents: b"k=v".to_vec(), executable: false };
        assert_eq!(
            packed(file, Expect::File).unwrap(),
            [(CONTENT.to_owned(), Regular, "k=v".to_owned()), (MARKER.to_owned(), Regular, commit.clone())]
        );
        let tree = tar_of(&[("a.ini", Regular, b"1", None), ("up", Symlink, b"", Some("../../etc"))]);
        assert_eq!(
            packed(TreeEntry::Directory(tree), Expect::FileOrFolder).unwrap(),
            [
                ("content/".to_owned(), Directory, String::new()),
                ("content/a.ini".to_owned(), Regular, "1".to_owned()),
                ("content/up".to_owned(), Symlink, "../../etc".to_owned()),
                (MARKER.to_owned(), Regular, commit.clone()),
            ],
            "a link inside stays a link, resolved in the container only"
        );
        // A bind source the repository lacks is an empty folder, as Compose
        // makes one.
        assert_eq!(
            packed(TreeEntry::Missing, Expect::FileOrFolder).unwrap(),
            [("content/".to_owned(), Directory, String::new()), (MARKER.to_owned(), Regular, commit)]
        );
    }

    #[test]
    fn a_link_a_missing_secret_and_a_folder_for_a_file_are_refused_with_the_path() {
        let err = packed(TreeEntry::Link("conf".into()), Expect::FileOrFolder).unwrap_err();
        assert!(err.contains("`./conf/app.ini`") && err.contains("symbolic link") && err.contains("`conf`"), "{err}");
        let err = packed(TreeEntry::Missing, Expect::File).unwrap_err();
        assert!(
            err.contains("`./conf/app.ini`") && err.contains("not a file") && err.contains("abc123abc123"),
            "{err}"
        );
        let err = packed(TreeEntry::Directory(tar_of(&[])), Expect::File).unwrap_err();
        assert!(err.contains("is a folder"), "{err}");
    }

    #[test]
    fn a_complete_fill_is_known_by_volume_creation_and_commit() {
        let known = Completed::default();
        known.remember(Completed::key("v", "2026-11-28T03:00:00Z", "abc"));
        assert!(known.knows(&Completed::key("v", "2026-11-28T03:00:00Z", "abc")));
        // Made again under its name, or another commit: checked again.
        assert!(!known.knows(&Completed::key("v", "2026-11-28T03:05:00Z", "abc")));
        assert!(!known.knows(&Completed::key("v", "2026-11-28T03:00:00Z", "def")));
        // Without a creation time nothing is remembered or known.
        known.remember(Completed::key("w", "", "abc"));
        assert!(!known.knows(&Completed::key("w", "", "abc")));
    }
}
