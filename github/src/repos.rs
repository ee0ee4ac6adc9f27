//! GitHub's repository endpoints play calls with an installation token:
//! get (attach), create in an organisation, delete (only to undo a create
//! that failed half-way), and the Git references and commits the push
//! builds on. Shapes from GitHub's REST reference ("Repositories", "Git
//! database").

use reqwest::Method;
use serde::{Deserialize, Serialize};

use crate::api::{GithubApi, send, send_unit};
use crate::{GithubError, Result};

/// A repository as GitHub describes it (the fields play reads).
#[derive(Clone, Debug, Deserialize)]
pub struct RepoBody {
    pub full_name: String,
    pub private: bool,
    pub description: Option<String>,
    pub default_branch: String,
}

/// `POST /orgs/{org}/repos`.
#[derive(Serialize)]
struct CreateBody<'a> {
    name: &'a str,
    description: &'a str,
    private: bool,
    auto_init: bool,
}

#[derive(Deserialize)]
struct RefBody {
    object: RefObject,
}

#[derive(Deserialize)]
struct RefObject {
    sha: String,
}

/// A commit of the Git database (`GET /repos/{o}/{r}/git/commits/{sha}`).
#[derive(Deserialize)]
pub(crate) struct CommitBody {
    pub(crate) sha: String,
    pub(crate) tree: ShaBody,
}

#[derive(Deserialize)]
pub(crate) struct ShaBody {
    pub(crate) sha: String,
}

/// What a branch read found.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) enum Head {
    /// The branch's commit.
    At(String),
    /// No such branch (the repository has commits).
    Missing,
    /// The repository has no commit at all: GitHub's Git database refuses
    /// every write there (409 "Git Repository is empty.").
    EmptyRepository,
}

/// One installation's token on one repository: the calls of a push.
pub(crate) struct RepoCalls<'a> {
    pub(crate) api: &'a GithubApi,
    pub(crate) token: &'a str,
    /// `/repos/{owner}/{name}`.
    pub(crate) base: String,
}

impl<'a> RepoCalls<'a> {
    pub(crate) fn new(api: &'a GithubApi, token: &'a str, owner: &str, name: &str) -> Self {
        RepoCalls { api, token, base: format!("/repos/{owner}/{name}") }
    }

    pub(crate) async fn get<T: serde::de::DeserializeOwned>(&self, rest: &str) -> Result<T> {
        let path = format!("{}{rest}", self.base);
        send(self.api.request(Method::GET, &path, self.token), &path).await
    }

    pub(crate) async fn post<T: serde::de::DeserializeOwned>(&self, rest: &str, body: &impl Serialize) -> Result<T> {
        let path = format!("{}{rest}", self.base);
        send(self.api.request(Method::POST, &path, self.token).json(body), &path).await
    }

    pub(crate) async fn patch(&self, rest: &str, body: &impl Serialize) -> Result<()> {
        let path = format!("{}{rest}", self.base);
        send_unit(self.api.request(Method::PATCH, &path, self.token).json(body), &path).await
    }

    pub(crate) async fn put<T: serde::de::DeserializeOwned>(&self, rest: &str, body: &impl Serialize) -> Result<T> {
        let path = format!("{}{rest}", self.base);
        send(self.api.request(Method::PUT, &path, self.token).json(body), &path).await
    }

    /// The repository itself.
    pub(crate) async fn repository(&self) -> Result<RepoBody> {
        self.get("").await
    }

    /// Branch `branch`'s head (`GET .../git/ref/heads/{branch}`).
    pub(crate) async fn head(&self, branch: &str) -> Result<Head> {
        match self.get::<RefBody>(&format!("/git/ref/heads/{branch}")).await {
            Ok(found) => Ok(Head::At(found.object.sha)),
            Err(GithubError::NotFound(_)) => Ok(Head::Missing),
            Err(GithubError::Conflict(_)) => Ok(Head::EmptyRepository),
            Err(e) => Err(e),
        }
    }

    pub(crate) async fn commit(&self, sha: &str) -> Result<CommitBody> {
        self.get(&format!("/git/commits/{sha}")).await
    }

    /// Deletes the repository (undoing a create); gone already is fine.
    pub(crate) async fn delete(&self) -> Result<()> {
        let path = self.base.clone();
        match send_unit(self.api.request(Method::DELETE, &path, self.token), &path).await {
            Err(GithubError::NotFound(_)) => Ok(()),
            other => other,
        }
    }
}

impl GithubApi {
    /// Creates repository `name` in organisation `org` with installation
    /// token `token`.
    pub(crate) async fn create_in_org(
        &self,
        token: &str,
        org: &str,
        name: &str,
        description: &str,
        private: bool,
        auto_init: bool,
    ) -> Result<RepoBody> {
        let path = format!("/orgs/{org}/repos");
        let body = CreateBody { name, description, private, auto_init };
        send(self.request(Method::POST, &path, token).json(&body), &path).await
    }
}
