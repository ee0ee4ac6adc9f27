//! play's own Git host, its storage side (issue #29): bare repositories
//! under one root folder, `<root>/<owner>/<name>.git`, created and written
//! with libgit2. Serving them over smart HTTP and recording pushes come on
//! top of this.
//!
//! # Invariants
//!
//! - A path on disk is made only from a checked [`FullName`] (owner an
//!   account name, name by `scm::names`' rule): no input reaches the file
//!   system unchecked, and nothing outside `root` is ever named.
//! - A push is one commit on top of the branch head, or nothing: the files
//!   are checked whole ([`PushFiles`]) and against the head's tree before
//!   any ref moves, and the ref moves by compare-and-swap
//!   (`reference_matching`, libgit2's lock file on the ref). A push that
//!   loses the race is rebuilt on the new head, so a concurrent push is
//!   never overwritten and no file is lost; after [`PUSH_ATTEMPTS`] lost
//!   races it is [`ScmError::Conflict`].
//! - No empty commits: a push whose files are all already there makes no
//!   commit (`changed: false`).
//! - Every file is a regular, non-executable blob (mode 100644).
//!
//! All calls block (libgit2): callers run them on a blocking thread.

use std::collections::BTreeSet;
use std::path::PathBuf;

use git2::{ErrorCode, Index, IndexEntry, IndexTime, Oid, Repository, RepositoryInitOptions, Signature, Tree};
use play_model::error::push_field_error;
use play_model::playzone::branch_name;
use play_model::repository::{RemoteBranch, RemoteRefs};
use play_model::scm::files::folders_of;
use play_model::scm::{Author, DEFAULT_BRANCH, FullName, PushFiles, PushOutcome, ScmError};
use play_model::{FieldErrors, scm};

/// How many times a push is rebuilt on a branch head that moved under it.
pub const PUSH_ATTEMPTS: usize = 5;

/// The repositories of play's own Git host.
#[derive(Clone, Debug)]
pub struct HostedRepositories {
    root: PathBuf,
}

/// A repository as created.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Created {
    pub full_name: FullName,
    pub default_branch: String,
    /// The README commit of `auto_init`.
    pub initial: Option<PushOutcome>,
}

impl HostedRepositories {
    pub fn new(root: impl Into<PathBuf>) -> Self {
        HostedRepositories { root: root.into() }
    }

    /// The folder every repository is under.
    pub fn root(&self) -> &std::path::Path {
        &self.root
    }

    /// Where `full` lives on disk (whether or not it exists).
    pub fn path_of(&self, full: &FullName) -> PathBuf {
        self.root.join(&full.owner).join(format!("{}.git", full.name))
    }

    /// Creates the bare repository `full`, with `description`; with
    /// `auto_init`, a first commit holding a README on the default branch.
    pub fn create(
        &self,
        full: &FullName,
        description: &str,
        auto_init: bool,
        by: &Author,
    ) -> Result<Created, ScmError> {
        let path = self.path_of(full);
        if path.exists() {
            return Err(ScmError::Exists(full.to_string()));
        }
        let parent = path.parent().unwrap_or(&self.root);
        std::fs::create_dir_all(parent).map_err(|e| failed("creating the owner's folder", &e))?;
        let mut options = RepositoryInitOptions::new();
        options.bare(true).no_reinit(true).mkpath(false).initial_head(DEFAULT_BRANCH).description(description);
        Repository::init_opts(&path, &options).map_err(|e| match e.code() {
            ErrorCode::Exists => ScmError::Exists(full.to_string()),
            _ => git_failed("creating the repository", &e),
        })?;
        let initial = if auto_init {
            let readme = format!("# {}\n\n{}\n", full.name, description.trim());
            let files = PushFiles::check(
                vec![scm::PushFile { path: "README.md".into(), content: readme.into_bytes() }],
                scm::DEFAULT_INITIAL_MESSAGE,
            )
            .map_err(|e| ScmError::Failed(format!("the README of a new repository: {e}")))?;
            Some(self.push(full, None, &files, by)?)
        } else {
            None
        };
        Ok(Created { full_name: full.clone(), default_branch: DEFAULT_BRANCH.to_owned(), initial })
    }

    /// Writes `files` as one commit on `branch` (default: the repository's
    /// default branch). A branch that does not exist yet starts from the
    /// default branch's head (or from nothing in an empty repository).
    pub fn push(
        &self,
        full: &FullName,
        branch: Option<&str>,
        files: &PushFiles,
        by: &Author,
    ) -> Result<PushOutcome, ScmError> {
        let repo = self.open(full)?;
        let default = default_branch(&repo);
        let branch = branch.unwrap_or(&default);
        if let Err(message) = branch_name(branch) {
            return Err(invalid("branch", message));
        }
        let refname = format!("refs/heads/{branch}");
        let signature = Signature::now(&by.name, &by.email).map_err(|e| git_failed("the commit's author", &e))?;
        for _ in 0..PUSH_ATTEMPTS {
            let head = target_of(&repo, &refname)?;
            let base = match head {
                Some(oid) => Some(oid),
                None => target_of(&repo, &format!("refs/heads/{default}"))?,
            };
            let base_commit =
                base.map(|oid| repo.find_commit(oid)).transpose().map_err(|e| git_failed("reading", &e))?;
            let base_tree =
                base_commit.as_ref().map(|c| c.tree()).transpose().map_err(|e| git_failed("reading", &e))?;
            let tree_id = write_tree(&repo, base_tree.as_ref(), files)?;
            let unchanged = base_tree.as_ref().is_some_and(|t| t.id() == tree_id);
            if let (true, Some(head)) = (unchanged, head) {
                return Ok(outcome(head, tree_id, files, Some(head), false));
            }
            let commit = match (unchanged, &base_commit) {
                // A new branch whose files are all on the default branch
                // already starts at its head: no empty commit.
                (true, Some(base)) => base.id(),
                _ => {
                    let tree = repo.find_tree(tree_id).map_err(|e| git_failed("reading the new tree", &e))?;
                    let parents: Vec<&git2::Commit<'_>> = base_commit.iter().collect();
                    repo.commit(None, &signature, &signature, files.message(), &tree, &parents)
                        .map_err(|e| git_failed("writing the commit", &e))?
                }
            };
            let moved = match head {
                Some(old) => repo.reference_matching(&refname, commit, true, old, "push"),
                None => repo.reference(&refname, commit, false, "push"),
            };
            match moved {
                Ok(_) => return Ok(outcome(commit, tree_id, files, head, true)),
                Err(e) if matches!(e.code(), ErrorCode::Modified | ErrorCode::Exists | ErrorCode::Locked) => continue,
                Err(e) => return Err(git_failed("moving the branch", &e)),
            }
        }
        Err(ScmError::Conflict(format!(
            "branch {branch} moved under this push {PUSH_ATTEMPTS} times in a row; push again"
        )))
    }

    /// Removes `full` from disk; nothing there is not an error. For a
    /// repository whose record was never committed (see
    /// `play_core::scm::flows`).
    pub fn forget(&self, full: &FullName) -> Result<(), ScmError> {
        match std::fs::remove_dir_all(self.path_of(full)) {
            Ok(()) => Ok(()),
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(()),
            Err(e) => Err(failed("removing a repository", &e)),
        }
    }

    /// The commit `branch` is at, if there is such a branch.
    pub fn head(&self, full: &FullName, branch: &str) -> Result<Option<String>, ScmError> {
        let repo = self.open(full)?;
        Ok(target_of(&repo, &format!("refs/heads/{branch}"))?.map(|oid| oid.to_string()))
    }

    /// Rewrites the repository's `description` file (what `create` wrote).
    pub fn set_description(&self, full: &FullName, description: &str) -> Result<(), ScmError> {
        let repo = self.open(full)?;
        std::fs::write(repo.path().join("description"), format!("{description}\n"))
            .map_err(|e| failed("writing the description", &e))
    }

    /// The repository's default branch (what `HEAD` names).
    pub fn default_branch(&self, full: &FullName) -> Result<String, ScmError> {
        Ok(default_branch(&self.open(full)?))
    }

    fn open(&self, full: &FullName) -> Result<Repository, ScmError> {
        let path = self.path_of(full);
        if !path.is_dir() {
            return Err(ScmError::NotFound);
        }
        Repository::open_bare(&path).map_err(|e| git_failed("opening the repository", &e))
    }
}

/// The branch `HEAD` names, even in an empty repository.
fn default_branch(repo: &Repository) -> String {
    let head = repo.find_reference("HEAD").ok().and_then(|h| h.symbolic_target().ok().flatten().map(str::to_owned));
    head.and_then(|h| h.strip_prefix("refs/heads/").map(str::to_owned)).unwrap_or_else(|| DEFAULT_BRANCH.to_owned())
}

/// The commit `refname` points at, or `None` when there is no such ref.
fn target_of(repo: &Repository, refname: &str) -> Result<Option<Oid>, ScmError> {
    match repo.find_reference(refname) {
        Ok(reference) => Ok(reference.target()),
        Err(e) if e.code() == ErrorCode::NotFound => Ok(None),
        Err(e) => Err(git_failed("reading the branch", &e)),
    }
}

/// Writes the tree of `base` with `files` put in (each replacing the file
/// at its path), refusing a file where `base` has a folder or below a
/// path where `base` has a file.
fn write_tree(repo: &Repository, base: Option<&Tree<'_>>, files: &PushFiles) -> Result<Oid, ScmError> {
    let mut index = Index::new().map_err(|e| git_failed("an index", &e))?;
    if let Some(tree) = base {
        index.read_tree(tree).map_err(|e| git_failed("reading the branch's tree", &e))?;
    }
    let existing: BTreeSet<String> =
        index.iter().map(|e| String::from_utf8_lossy(&e.path).into_owned()).collect::<BTreeSet<_>>();
    let folders: BTreeSet<&str> = existing.iter().flat_map(|p| folders_of(p)).collect();
    let mut errors = FieldErrors::new();
    for (i, file) in files.files().iter().enumerate() {
        if folders.contains(file.path.as_str()) {
            push_field_error(&mut errors, format!("files[{i}].path"), "the branch has a folder at this path");
        } else if let Some(f) = folders_of(&file.path).find(|f| existing.contains(*f)) {
            push_field_error(&mut errors, format!("files[{i}].path"), format!("the branch has a file at {f:?}"));
        }
    }
    if !errors.is_empty() {
        return Err(ScmError::Invalid(errors));
    }
    for file in files.files() {
        let blob = repo.blob(&file.content).map_err(|e| git_failed("writing a file", &e))?;
        index.add(&entry(&file.path, blob, file.content.len())).map_err(|e| git_failed("adding a file", &e))?;
    }
    index.write_tree_to(repo).map_err(|e| git_failed("writing the tree", &e))
}

/// A regular file's index entry (mode 100644).
fn entry(path: &str, id: Oid, size: usize) -> IndexEntry {
    IndexEntry {
        ctime: IndexTime::new(0, 0),
        mtime: IndexTime::new(0, 0),
        dev: 0,
        ino: 0,
        mode: 0o100_644,
        uid: 0,
        gid: 0,
        file_size: u32::try_from(size).unwrap_or(u32::MAX),
        id,
        flags: u16::try_from(path.len()).unwrap_or(0xfff).min(0xfff),
        flags_extended: 0,
        path: path.as_bytes().to_vec(),
    }
}

fn outcome(commit: Oid, tree: Oid, files: &PushFiles, previous: Option<Oid>, changed: bool) -> PushOutcome {
    PushOutcome {
        commit_sha: commit.to_string(),
        tree_sha: tree.to_string(),
        files_pushed: files.len(),
        previous: previous.map(|p| p.to_string()),
        changed,
    }
}

fn invalid(field: &str, message: &str) -> ScmError {
    let mut errors = FieldErrors::new();
    push_field_error(&mut errors, field, message);
    ScmError::Invalid(errors)
}

fn git_failed(what: &str, error: &git2::Error) -> ScmError {
    ScmError::Failed(format!("{what}: {}", error.message()))
}

fn failed(what: &str, error: &std::io::Error) -> ScmError {
    ScmError::Failed(format!("{what}: {error}"))
}

/// The branches of a hosted repository as its smart-HTTP advertisement
/// lists them: sorted by name, with the default branch only when it
/// exists (an empty repository advertises no `HEAD`). The gateway reads
/// play's own repositories this way, without the network.
pub(crate) fn list_refs(repo: &Repository, max_branches: usize) -> crate::error::Result<RemoteRefs> {
    use crate::error::Error;
    let failed = |e: git2::Error| Error::Failed(format!("listing the branches: {}", e.message()));
    let mut refs = RemoteRefs::default();
    for reference in repo.references_glob("refs/heads/*").map_err(failed)? {
        let reference = reference.map_err(failed)?;
        let (Some(name), Some(commit)) =
            (reference.name().ok().and_then(|n| n.strip_prefix("refs/heads/")), reference.target())
        else {
            continue;
        };
        if refs.branches.len() == max_branches {
            return Err(Error::TooLarge(format!("the repository has more than {max_branches} branches")));
        }
        refs.branches.push(RemoteBranch { name: name.to_owned(), commit: commit.to_string() });
    }
    refs.branches.sort_by(|a, b| a.name.cmp(&b.name));
    let head = default_branch(repo);
    refs.default_branch = refs.branches.iter().any(|b| b.name == head).then_some(head);
    Ok(refs)
}
