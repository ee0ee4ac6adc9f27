//! Pull requests (issue #30): what play reads of a provider's pull
//! requests, and what it tells the provider about the previews it keeps
//! for them. The seam is [`ReviewHost`], implemented by the GitHub App's
//! installation host (`play_github::host`); play's own Git host has no
//! pull requests.
//!
//! A pull request's head is built through the name [`pull_ref`]
//! (`pull/<number>/head`, GitHub's own ref name), which the Playzone's
//! pull request index resolves to the head commit: a Playground pinned to
//! it shows `needs_rollout` when the head moves, as a branch's does.

use std::fmt;

use async_trait::async_trait;

use super::{FullName, ScmError};
use crate::time::Timestamp;

/// The most open pull requests a pass reads of one repository; a
/// repository with more is a problem on the trigger, not a partial view.
pub const MAX_OPEN_PULLS: usize = 1_000;

/// The pin name of pull request `number`'s head.
pub fn pull_ref(number: u64) -> String {
    format!("pull/{number}/head")
}

/// The pull request number `name` pins, when it is a [`pull_ref`].
pub fn pull_number(name: &str) -> Option<u64> {
    let digits = name.strip_prefix("pull/")?.strip_suffix("/head")?;
    let plain = !digits.is_empty() && digits.len() <= 12 && digits.bytes().all(|b| b.is_ascii_digit());
    plain.then(|| digits.parse().ok()).flatten().filter(|n| *n > 0 && !digits.starts_with('0'))
}

/// Open or closed (merged is closed).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum PullState {
    Open,
    Closed,
}

impl PullState {
    pub fn as_str(self) -> &'static str {
        match self {
            PullState::Open => "open",
            PullState::Closed => "closed",
        }
    }

    pub fn parse(text: &str) -> Option<PullState> {
        match text {
            "open" => Some(PullState::Open),
            "closed" => Some(PullState::Closed),
            _ => None,
        }
    }
}

impl fmt::Display for PullState {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

/// A pull request as the provider described it (its list, one read, or a
/// webhook delivery).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct PullRequest {
    pub number: u64,
    pub state: PullState,
    pub head_sha: String,
    /// The head branch's name (in the head repository).
    pub head_ref: String,
    /// The head repository's full name; `None` when it was deleted.
    pub head_repo: Option<String>,
    /// The branch it asks to merge into.
    pub base_ref: String,
    /// Its head is in another repository than the base (a fork): its
    /// code is someone else's.
    pub fork: bool,
    pub title: String,
    pub html_url: String,
    /// The provider's time of its last change: between two descriptions of
    /// one pull request, the later one holds.
    pub updated_at: Timestamp,
}

/// A deployment's state, as GitHub names deployment statuses.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum DeploymentState {
    InProgress,
    Success,
    Failure,
    Inactive,
}

impl DeploymentState {
    pub fn as_str(self) -> &'static str {
        match self {
            DeploymentState::InProgress => "in_progress",
            DeploymentState::Success => "success",
            DeploymentState::Failure => "failure",
            DeploymentState::Inactive => "inactive",
        }
    }
}

/// What play tells the provider about one preview.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct PreviewReport {
    pub number: u64,
    /// Marks play's comment on the pull request (an HTML comment inside
    /// it): found again after a crash, never created twice.
    pub marker: String,
    pub body: String,
    /// The deployment environment (`play/<template>/pr-<n>`).
    pub environment: String,
    pub commit: String,
    pub state: DeploymentState,
    pub environment_url: Option<String>,
    pub description: String,
}

/// Pull requests of a provider's repositories, and the comment and
/// deployment of each preview.
#[async_trait]
pub trait ReviewHost: Send + Sync + fmt::Debug {
    /// The open pull requests of `full` (every base branch), at most
    /// [`MAX_OPEN_PULLS`]: more is an error saying so.
    async fn open_pulls(&self, full: &FullName) -> Result<Vec<PullRequest>, ScmError>;

    /// Pull request `number` of `full`; `None` when there is none.
    async fn pull(&self, full: &FullName, number: u64) -> Result<Option<PullRequest>, ScmError>;

    /// Writes play's comment on pull request `report.number`: edits
    /// `comment_id` (or the comment of play's that carries the marker),
    /// else creates it. Its id.
    async fn comment(
        &self,
        full: &FullName,
        report: &PreviewReport,
        comment_id: Option<&str>,
    ) -> Result<String, ScmError>;

    /// The deployment of `report.commit` to `report.environment` (the one
    /// there, else a new one); its id.
    async fn deployment(&self, full: &FullName, report: &PreviewReport) -> Result<String, ScmError>;

    /// Adds a status to deployment `id`.
    async fn deployment_status(&self, full: &FullName, id: &str, report: &PreviewReport) -> Result<(), ScmError>;
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn pull_refs_round_trip_and_nothing_else_is_one() {
        assert_eq!(pull_ref(42), "pull/42/head");
        assert_eq!(pull_number("pull/42/head"), Some(42));
        for name in
            ["pull/0/head", "pull/042/head", "pull//head", "pull/4x/head", "pull/4/merge", "main", "x/pull/4/head"]
        {
            assert_eq!(pull_number(name), None, "{name}");
        }
    }
}
