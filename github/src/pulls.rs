//! Pull requests, their comments and deployments, as a GitHub App
//! installation reads and writes them (issue #30): the [`ReviewHost`] of
//! [`InstallationHost`]. Shapes from GitHub's REST reference ("Pulls",
//! "Issue comments", "Deployments", "Deployment statuses").
//!
//! - Open pull requests are listed 100 a page, at most
//!   [`MAX_OPEN_PULLS`]; more is an error, never a partial view (a pass
//!   would destroy the previews it did not see).
//! - play's comment is found by its marker among the comments of the
//!   app's bot user (`<slug>[bot]`), so a crash between creating it and
//!   recording its id never makes a second one, and a comment someone
//!   else wrote with the marker is never edited.
//! - A deployment is found by commit and environment before one is made.

use async_trait::async_trait;
use chrono::{DateTime, Utc};
use play_model::scm::pulls::{MAX_OPEN_PULLS, PreviewReport, PullRequest, PullState, ReviewHost};
use play_model::scm::{FullName, ScmError};
use serde::{Deserialize, Serialize};

use crate::host::InstallationHost;
use crate::repos::RepoCalls;
use crate::tokens::{DEPLOYMENTS_WRITE, PULL_REQUESTS_READ, PULL_REQUESTS_WRITE, Permission, TokenScope};
use crate::{GithubError, scm_error};

/// GitHub's page size for lists play reads whole.
const PER_PAGE: usize = 100;

#[derive(Deserialize)]
pub(crate) struct PullBody {
    number: u64,
    state: String,
    title: String,
    html_url: String,
    updated_at: DateTime<Utc>,
    head: PullEnd,
    base: PullEnd,
}

#[derive(Deserialize)]
struct PullEnd {
    #[serde(rename = "ref")]
    reference: String,
    sha: String,
    repo: Option<RepoName>,
}

#[derive(Deserialize)]
struct RepoName {
    full_name: String,
}

impl PullBody {
    fn into_pull(self) -> PullRequest {
        let head_repo = self.head.repo.map(|r| r.full_name);
        let base_repo = self.base.repo.map(|r| r.full_name);
        // A head repository that is gone (the fork was deleted) is
        // someone else's code as much as a fork is.
        let fork = match (&head_repo, &base_repo) {
            (Some(head), Some(base)) => !head.eq_ignore_ascii_case(base),
            _ => true,
        };
        PullRequest {
            number: self.number,
            state: if self.state == "open" { PullState::Open } else { PullState::Closed },
            head_sha: self.head.sha.to_ascii_lowercase(),
            head_ref: self.head.reference,
            head_repo,
            base_ref: self.base.reference,
            fork,
            title: self.title.chars().take(300).collect(),
            html_url: self.html_url,
            updated_at: self.updated_at,
        }
    }
}

#[derive(Deserialize)]
struct CommentBody {
    id: u64,
    body: Option<String>,
    user: Option<UserBody>,
}

#[derive(Deserialize)]
struct UserBody {
    login: String,
}

#[derive(Serialize)]
struct NewComment<'a> {
    body: &'a str,
}

#[derive(Deserialize)]
struct IdBody {
    id: u64,
}

#[derive(Serialize)]
struct NewDeployment<'a> {
    #[serde(rename = "ref")]
    reference: &'a str,
    environment: &'a str,
    description: &'a str,
    auto_merge: bool,
    required_contexts: [&'a str; 0],
    transient_environment: bool,
    production_environment: bool,
}

#[derive(Serialize)]
struct NewStatus<'a> {
    state: &'a str,
    #[serde(skip_serializing_if = "Option::is_none")]
    environment_url: Option<&'a str>,
    description: &'a str,
    auto_inactive: bool,
}

impl InstallationHost {
    /// Runs `work` with a token limited to `full` and `permission`.
    async fn calls_for<T>(
        &self,
        full: &FullName,
        permission: Permission,
        work: impl AsyncFnOnce(RepoCalls<'_>) -> crate::Result<T>,
    ) -> Result<T, ScmError> {
        let token = self.token(&TokenScope::on(&full.name, &[permission])).await?;
        work(RepoCalls::new(self.api(), &token, self.login(), &full.name)).await.map_err(scm_error)
    }
}

#[async_trait]
impl ReviewHost for InstallationHost {
    async fn open_pulls(&self, full: &FullName) -> Result<Vec<PullRequest>, ScmError> {
        self.calls_for(full, PULL_REQUESTS_READ, async |calls| {
            let mut out = Vec::new();
            for page in 1.. {
                let rest = format!("/pulls?state=open&per_page={PER_PAGE}&page={page}");
                let listed: Vec<PullBody> = calls.get(&rest).await?;
                let last = listed.len() < PER_PAGE;
                out.extend(listed.into_iter().map(PullBody::into_pull));
                if out.len() > MAX_OPEN_PULLS {
                    return Err(GithubError::Failed(format!(
                        "{full} has more than {MAX_OPEN_PULLS} open pull requests, more than play follows"
                    )));
                }
                if last {
                    break;
                }
            }
            Ok(out)
        })
        .await
    }

    async fn pull(&self, full: &FullName, number: u64) -> Result<Option<PullRequest>, ScmError> {
        self.calls_for(full, PULL_REQUESTS_READ, async |calls| {
            match calls.get::<PullBody>(&format!("/pulls/{number}")).await {
                Ok(body) => Ok(Some(body.into_pull())),
                Err(GithubError::NotFound(_)) => Ok(None),
                Err(e) => Err(e),
            }
        })
        .await
    }

    async fn comment(
        &self,
        full: &FullName,
        report: &PreviewReport,
        comment_id: Option<&str>,
    ) -> Result<String, ScmError> {
        let bot = format!("{}[bot]", self.api().config().slug);
        self.calls_for(full, PULL_REQUESTS_WRITE, async |calls| {
            let body = NewComment { body: &report.body };
            if let Some(id) = comment_id {
                match calls.patch(&format!("/issues/comments/{id}"), &body).await {
                    Ok(()) => return Ok(id.to_owned()),
                    // Deleted by someone: found again or made anew below.
                    Err(GithubError::NotFound(_)) => {}
                    Err(e) => return Err(e),
                }
            }
            for page in 1..=10 {
                let rest = format!("/issues/{}/comments?per_page={PER_PAGE}&page={page}", report.number);
                let listed: Vec<CommentBody> = calls.get(&rest).await?;
                let last = listed.len() < PER_PAGE;
                let ours = listed.into_iter().find(|c| {
                    c.user.as_ref().is_some_and(|u| u.login.eq_ignore_ascii_case(&bot))
                        && c.body.as_deref().is_some_and(|b| b.contains(&report.marker))
                });
                if let Some(found) = ours {
                    calls.patch(&format!("/issues/comments/{}", found.id), &body).await?;
                    return Ok(found.id.to_string());
                }
                if last {
                    break;
                }
            }
            let made: IdBody = calls.post(&format!("/issues/{}/comments", report.number), &body).await?;
            Ok(made.id.to_string())
        })
        .await
    }

    async fn deployment(&self, full: &FullName, report: &PreviewReport) -> Result<String, ScmError> {
        self.calls_for(full, DEPLOYMENTS_WRITE, async |calls| {
            let query = format!(
                "/deployments?sha={}&environment={}",
                report.commit,
                percent_encoding::utf8_percent_encode(&report.environment, percent_encoding::NON_ALPHANUMERIC)
            );
            let found: Vec<IdBody> = calls.get(&query).await?;
            if let Some(first) = found.first() {
                return Ok(first.id.to_string());
            }
            let body = NewDeployment {
                reference: &report.commit,
                environment: &report.environment,
                description: "play preview",
                auto_merge: false,
                required_contexts: [],
                transient_environment: true,
                production_environment: false,
            };
            let made: IdBody = calls.post("/deployments", &body).await?;
            Ok(made.id.to_string())
        })
        .await
    }

    async fn deployment_status(&self, full: &FullName, id: &str, report: &PreviewReport) -> Result<(), ScmError> {
        self.calls_for(full, DEPLOYMENTS_WRITE, async |calls| {
            let body = NewStatus {
                state: report.state.as_str(),
                environment_url: report.environment_url.as_deref(),
                description: &report.description,
                auto_inactive: false,
            };
            let _: IdBody = calls.post(&format!("/deployments/{id}/statuses"), &body).await?;
            Ok(())
        })
        .await
    }
}
