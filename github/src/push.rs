//! A push as one commit through GitHub's Git database API ("Git
//! database" in GitHub's REST reference): a tree on the branch head's tree
//! (`base_tree`), a commit whose parent is that head, then the branch
//! moved to it without `force`, which GitHub refuses (422) unless the new
//! commit descends from the branch's current head. A push that loses that
//! race is built again on the new head, up to [`PUSH_ATTEMPTS`] times, then
//! answers a conflict: a concurrent push is never overwritten.
//!
//! Text files travel inside the tree request (`content`), other files as
//! base64 blobs first. A tree equal to the head's makes no commit.
//!
//! An empty repository (no commit at all) is the exception GitHub forces:
//! its Git database refuses every write (409). The first file is written
//! with the contents API, which can make a first commit, and when there are
//! more files, one root commit of them all replaces it: the branch is moved
//! with `force` only after checking that it still points at that first
//! commit, so only a push racing within that moment on a repository that
//! was empty could be lost (documented in `docs/repositories.md`).

use base64::Engine;
use base64::engine::general_purpose::STANDARD;
use percent_encoding::{AsciiSet, NON_ALPHANUMERIC, utf8_percent_encode};
use play_model::scm::{Author, PushFiles, PushOutcome, ScmError};
use serde::{Deserialize, Serialize};

use crate::GithubError;
use crate::repos::{CommitBody, Head, RepoCalls, ShaBody};

/// How many times a push is built again on a branch head that moved.
pub const PUSH_ATTEMPTS: usize = 5;

#[derive(Serialize)]
struct TreeEntry<'a> {
    path: &'a str,
    mode: &'static str,
    #[serde(rename = "type")]
    kind: &'static str,
    #[serde(skip_serializing_if = "Option::is_none")]
    sha: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    content: Option<&'a str>,
}

#[derive(Serialize)]
struct NewTree<'a> {
    #[serde(skip_serializing_if = "Option::is_none")]
    base_tree: Option<&'a str>,
    tree: Vec<TreeEntry<'a>>,
}

#[derive(Serialize)]
struct NewBlob {
    content: String,
    encoding: &'static str,
}

#[derive(Clone, Copy, Serialize)]
struct Person<'a> {
    name: &'a str,
    email: &'a str,
}

#[derive(Serialize)]
struct NewCommit<'a> {
    message: &'a str,
    tree: &'a str,
    parents: Vec<&'a str>,
    author: Person<'a>,
    committer: Person<'a>,
}

#[derive(Serialize)]
struct MoveRef<'a> {
    sha: &'a str,
    force: bool,
}

#[derive(Serialize)]
struct NewRef {
    #[serde(rename = "ref")]
    reference: String,
    sha: String,
}

#[derive(Serialize)]
struct NewFile<'a> {
    message: &'a str,
    content: String,
    branch: &'a str,
    author: Person<'a>,
    committer: Person<'a>,
}

#[derive(Deserialize)]
struct FileWritten {
    commit: CommitBody,
}

fn failed(error: GithubError) -> ScmError {
    crate::scm_error(error)
}

/// Writes `files` as one commit on `branch` of the repository `calls`
/// reach, whose default branch is `default_branch`. A branch that does not
/// exist starts from the default branch's head.
pub(crate) async fn push(
    calls: &RepoCalls<'_>,
    branch: &str,
    default_branch: &str,
    files: &PushFiles,
    by: &Author,
) -> Result<PushOutcome, ScmError> {
    let person = Person { name: &by.name, email: &by.email };
    for _ in 0..PUSH_ATTEMPTS {
        let head = calls.head(branch).await.map_err(failed)?;
        let (previous, base) = match head {
            Head::At(sha) => (Some(sha.clone()), Some(sha)),
            Head::EmptyRepository => return first_push(calls, branch, default_branch, files, person).await,
            Head::Missing => match calls.head(default_branch).await.map_err(failed)? {
                Head::At(sha) => (None, Some(sha)),
                _ => (None, None),
            },
        };
        let base_tree = match &base {
            Some(sha) => Some(calls.commit(sha).await.map_err(failed)?.tree.sha),
            None => None,
        };
        let tree = write_tree(calls, base_tree.as_deref(), files).await?;
        let unchanged = base_tree.as_deref() == Some(tree.as_str());
        if let (true, Some(head)) = (unchanged, &previous) {
            return Ok(outcome(head.clone(), tree, files, previous.clone(), false));
        }
        let commit = match (unchanged, &base) {
            // A new branch whose files are all on the default branch
            // already starts at its head: no empty commit.
            (true, Some(base)) => base.clone(),
            _ => {
                let parents: Vec<&str> = base.as_deref().into_iter().collect();
                let made =
                    NewCommit { message: files.message(), tree: &tree, parents, author: person, committer: person };
                calls.post::<ShaBody>("/git/commits", &made).await.map_err(failed)?.sha
            }
        };
        let moved = match &previous {
            Some(_) => calls.patch(&format!("/git/refs/heads/{branch}"), &MoveRef { sha: &commit, force: false }).await,
            None => {
                let new = NewRef { reference: format!("refs/heads/{branch}"), sha: commit.clone() };
                calls.post::<serde_json::Value>("/git/refs", &new).await.map(drop)
            }
        };
        match moved {
            Ok(()) => return Ok(outcome(commit, tree, files, previous, true)),
            // Not a fast-forward, or the branch was created meanwhile:
            // build again on what is there now.
            Err(GithubError::Unprocessable(_)) => continue,
            Err(e) => return Err(failed(e)),
        }
    }
    Err(ScmError::Conflict(format!("branch {branch} moved under this push {PUSH_ATTEMPTS} times in a row; push again")))
}

fn outcome(commit: String, tree: String, files: &PushFiles, previous: Option<String>, changed: bool) -> PushOutcome {
    PushOutcome { commit_sha: commit, tree_sha: tree, files_pushed: files.len(), previous, changed }
}

/// A tree of `files` on `base_tree` (or of them alone).
async fn write_tree(calls: &RepoCalls<'_>, base_tree: Option<&str>, files: &PushFiles) -> Result<String, ScmError> {
    let mut entries = Vec::with_capacity(files.len());
    for file in files.files() {
        let entry = match std::str::from_utf8(&file.content) {
            Ok(text) => TreeEntry { path: &file.path, mode: "100644", kind: "blob", sha: None, content: Some(text) },
            Err(_) => {
                let blob = NewBlob { content: STANDARD.encode(&file.content), encoding: "base64" };
                let made: ShaBody = calls.post("/git/blobs", &blob).await.map_err(failed)?;
                TreeEntry { path: &file.path, mode: "100644", kind: "blob", sha: Some(made.sha), content: None }
            }
        };
        entries.push(entry);
    }
    let made: ShaBody = calls.post("/git/trees", &NewTree { base_tree, tree: entries }).await.map_err(|e| match e {
        GithubError::Unprocessable(m) => ScmError::Conflict(format!(
            "GitHub refused the tree (a file where the branch has a folder, or the reverse?): {m}"
        )),
        other => failed(other),
    })?;
    Ok(made.sha)
}

/// The first push to an empty repository (see the [module
/// documentation](self)).
async fn first_push(
    calls: &RepoCalls<'_>,
    branch: &str,
    default_branch: &str,
    files: &PushFiles,
    person: Person<'_>,
) -> Result<PushOutcome, ScmError> {
    if branch != default_branch {
        let mut errors = play_model::FieldErrors::new();
        play_model::error::push_field_error(
            &mut errors,
            "branch",
            format!("the repository is empty: its first push goes to its default branch {default_branch}"),
        );
        return Err(ScmError::Invalid(errors));
    }
    let Some((first, _)) = files.files().split_first() else {
        return Err(ScmError::Failed("a push without files".into()));
    };
    let written = NewFile {
        message: files.message(),
        content: STANDARD.encode(&first.content),
        branch,
        author: person,
        committer: person,
    };
    let start: FileWritten =
        calls.put(&format!("/contents/{}", path_in_url(&first.path)), &written).await.map_err(|e| match e {
            // Someone wrote the file meanwhile: the repository is no longer empty.
            GithubError::Unprocessable(m) | GithubError::Conflict(m) => ScmError::Conflict(format!(
                "the empty repository got a first commit during this push; push again ({m})"
            )),
            other => failed(other),
        })?;
    if files.len() == 1 {
        return Ok(outcome(start.commit.sha, start.commit.tree.sha, files, None, true));
    }
    let tree = write_tree(calls, None, files).await?;
    let made =
        NewCommit { message: files.message(), tree: &tree, parents: Vec::new(), author: person, committer: person };
    let commit: ShaBody = calls.post("/git/commits", &made).await.map_err(failed)?;
    if calls.head(branch).await.map_err(failed)? != Head::At(start.commit.sha.clone()) {
        return Err(ScmError::Conflict(format!(
            "branch {branch} moved during the first push to the empty repository; push again"
        )));
    }
    calls
        .patch(&format!("/git/refs/heads/{branch}"), &MoveRef { sha: &commit.sha, force: true })
        .await
        .map_err(failed)?;
    Ok(outcome(commit.sha, tree, files, None, true))
}

/// Bytes kept as they are in a URL path: RFC 3986's unreserved set and `/`.
const PATH_KEEPS: &AsciiSet = &NON_ALPHANUMERIC.remove(b'-').remove(b'.').remove(b'_').remove(b'~').remove(b'/');

/// `path` percent-encoded for a URL path.
fn path_in_url(path: &str) -> String {
    utf8_percent_encode(path, PATH_KEEPS).to_string()
}

#[cfg(test)]
mod tests {
    #[test]
    fn paths_are_encoded_for_urls() {
        assert_eq!(super::path_in_url("docs/a b#?%.md"), "docs/a%20b%23%3F%25.md");
        assert_eq!(super::path_in_url("é"), "%C3%A9");
    }
}
