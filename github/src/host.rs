//! The GitHub App behind play's seams: [`InstallableApp`] (install flow,
//! attach's lookup, URLs), a [`SourceHost`] per installation (create in an
//! organisation, push through the Git database), and [`InstallationTokens`]
//! for git over HTTPS. Every call carries the installation's short-lived
//! token from the cache; none is stored or logged.

use std::sync::Arc;

use async_trait::async_trait;
use play_model::repository::{GitAccess, InstallationTokens, RepositoryError};
use play_model::scm::host::{
    AppRepository, ConfirmedInstallation, Created, InstallableApp, Removal, RepoUrls, SourceHost,
};
use play_model::scm::model::{Installation, Provider};
use play_model::scm::{Author, FullName, PushFiles, PushOutcome, ScmError};

use crate::api::GithubApi;
use crate::repos::{Head, RepoCalls};
use crate::tokens::{ADMINISTRATION_WRITE, CONTENTS_READ, CONTENTS_WRITE, METADATA_READ, TokenScope};
use crate::{GithubError, push, scm_error};

fn installation_number(external_id: &str) -> Result<u64, ScmError> {
    external_id.parse().map_err(|_| ScmError::Failed(format!("{external_id:?} is not a GitHub installation id")))
}

/// The repositories of one installation: under the user or organisation
/// it is installed on.
#[derive(Debug)]
pub struct InstallationHost {
    api: Arc<GithubApi>,
    installation: u64,
    /// The login, as GitHub spells it.
    login: String,
    organisation: bool,
}

impl InstallationHost {
    pub(crate) fn api(&self) -> &GithubApi {
        &self.api
    }

    /// The user or organisation it is installed on, as GitHub spells it.
    pub(crate) fn login(&self) -> &str {
        &self.login
    }

    /// A token of this installation limited to `scope` (issue #49, item
    /// 1: each call asks for its repository and permissions only).
    pub(crate) async fn token(&self, scope: &TokenScope) -> Result<String, ScmError> {
        let token = self.api.installation_token(self.installation, scope).await.map_err(scm_error)?;
        Ok(token.secret().to_owned())
    }
}

#[async_trait]
impl SourceHost for InstallationHost {
    fn provider(&self) -> Provider {
        Provider::Github
    }

    /// Only in an organisation: GitHub lets an app create repositories
    /// there and not in a user's account (that needs the user's own
    /// token), so a user installation is refused with what to do instead.
    async fn create(
        &self,
        full: &FullName,
        description: &str,
        private: bool,
        auto_init: bool,
        _by: &Author,
    ) -> Result<Created, ScmError> {
        if !self.organisation {
            let mut errors = play_model::FieldErrors::new();
            play_model::error::push_field_error(
                &mut errors,
                "installation_id",
                format!(
                    "{} is a GitHub user account, where GitHub lets an app create no repository: create {} on \
                     GitHub, give the app access to it, then attach it (POST /api/playzones/attach) and push",
                    self.login, full.name
                ),
            );
            return Err(ScmError::Invalid(errors));
        }
        // The repository does not exist yet: no token can name it.
        let token = self.token(&TokenScope::installation_wide(&[ADMINISTRATION_WRITE])).await?;
        let made =
            self.api.create_in_org(&token, &self.login, &full.name, description, private, auto_init).await.map_err(
                |e| match e {
                    GithubError::Unprocessable(_) => ScmError::Exists(full.to_string()),
                    other => scm_error(other),
                },
            )?;
        let mut initial = None;
        if auto_init {
            let token = self.token(&TokenScope::on(&full.name, &[CONTENTS_READ])).await?;
            let calls = RepoCalls::new(&self.api, &token, &self.login, &full.name);
            if let Head::At(sha) = calls.head(&made.default_branch).await.map_err(scm_error)? {
                let tree = calls.commit(&sha).await.map_err(scm_error)?.tree.sha;
                initial = Some(PushOutcome {
                    commit_sha: sha,
                    tree_sha: tree,
                    files_pushed: 1,
                    previous: None,
                    changed: true,
                });
            }
        }
        Ok(Created { default_branch: made.default_branch, initial })
    }

    /// Deletes only to undo a create of this call: a repository on GitHub
    /// may be someone's work, so neither a leftover nor a deleted record
    /// removes it there.
    async fn remove(&self, full: &FullName, why: Removal) -> Result<(), ScmError> {
        if why != Removal::Undo {
            return Ok(());
        }
        let token = self.token(&TokenScope::on(&full.name, &[ADMINISTRATION_WRITE])).await?;
        RepoCalls::new(&self.api, &token, &self.login, &full.name).delete().await.map_err(scm_error)
    }

    async fn push(
        &self,
        full: &FullName,
        branch: Option<&str>,
        files: &PushFiles,
        by: &Author,
    ) -> Result<PushOutcome, ScmError> {
        let token = self.token(&TokenScope::on(&full.name, &[CONTENTS_WRITE])).await?;
        let calls = RepoCalls::new(&self.api, &token, &self.login, &full.name);
        let default_branch = calls.repository().await.map_err(scm_error)?.default_branch;
        let branch = branch.unwrap_or(&default_branch);
        push::push(&calls, branch, &default_branch, files, by).await
    }

    async fn head(&self, full: &FullName, branch: &str) -> Result<Option<String>, ScmError> {
        let token = self.token(&TokenScope::on(&full.name, &[CONTENTS_READ])).await?;
        let calls = RepoCalls::new(&self.api, &token, &self.login, &full.name);
        match calls.head(branch).await.map_err(scm_error)? {
            Head::At(sha) => Ok(Some(sha)),
            Head::Missing | Head::EmptyRepository => Ok(None),
        }
    }

    /// `PATCH /repos/{owner}/{repo}` with the two settings.
    async fn update(&self, full: &FullName, description: &str, private: bool) -> Result<(), ScmError> {
        let token = self.token(&TokenScope::on(&full.name, &[ADMINISTRATION_WRITE])).await?;
        let calls = RepoCalls::new(&self.api, &token, &self.login, &full.name);
        let body = serde_json::json!({ "description": description, "private": private });
        calls.patch("", &body).await.map_err(scm_error)
    }

    fn urls(&self, full: &FullName) -> RepoUrls {
        self.api.urls(full)
    }

    fn reviews(&self) -> Option<&dyn play_model::scm::pulls::ReviewHost> {
        Some(self)
    }
}

impl GithubApi {
    /// Where GitHub serves `full`: under the web URL (`https://github.com`
    /// or a GitHub Enterprise Server's), SSH on the same host.
    pub fn urls(&self, full: &FullName) -> RepoUrls {
        let web = self.config().web_url.trim_end_matches('/');
        let html_url = format!("{web}/{}/{}", full.owner, full.name);
        let host = web.split_once("://").map_or(web, |(_, rest)| rest);
        let host = host.split(['/', ':']).next().unwrap_or(host);
        RepoUrls {
            clone_url: format!("{html_url}.git"),
            ssh_url: Some(format!("git@{host}:{}/{}.git", full.owner, full.name)),
            html_url,
        }
    }
}

#[async_trait]
impl InstallableApp for GithubApi {
    fn provider(&self) -> Provider {
        Provider::Github
    }

    fn install_url(&self, state: &str) -> String {
        self.config().install_url(state)
    }

    async fn confirm(&self, code: &str, external_id: &str) -> Result<ConfirmedInstallation, ScmError> {
        let id: u64 = external_id.parse().map_err(|_| ScmError::NotFound)?;
        self.confirm_installation(code, id).await.map_err(|e| match e {
            GithubError::NotFound(_) => ScmError::NotFound,
            GithubError::NotPermitted(m) => {
                let mut errors = play_model::FieldErrors::new();
                play_model::error::push_field_error(&mut errors, "installation_id", m);
                ScmError::Invalid(errors)
            }
            GithubError::Unauthorized(m) => {
                let mut errors = play_model::FieldErrors::new();
                play_model::error::push_field_error(
                    &mut errors,
                    "code",
                    format!("GitHub did not accept the authorization code ({m}): install the app again"),
                );
                ScmError::Invalid(errors)
            }
            other => ScmError::Failed(other.to_string()),
        })
    }

    fn host(self: Arc<Self>, installation: &Installation) -> Result<Arc<dyn SourceHost>, ScmError> {
        Ok(Arc::new(InstallationHost {
            installation: installation_number(&installation.external_id)?,
            login: installation.account_login.clone(),
            organisation: installation.organisation,
            api: self,
        }))
    }

    async fn repository(
        &self,
        installation: &Installation,
        full: &FullName,
    ) -> Result<Option<AppRepository>, ScmError> {
        let id = installation_number(&installation.external_id)?;
        if !full.owner.eq_ignore_ascii_case(&installation.account_login) {
            // A token names repositories under the installation's own
            // account: another owner's is not this installation's.
            return Ok(None);
        }
        let scope = TokenScope::on(&full.name, &[METADATA_READ]);
        let token = match self.installation_token(id, &scope).await {
            Ok(token) => token,
            // GitHub refuses a token for a repository the installation
            // was not given (or that does not exist) with 422.
            Err(GithubError::Unprocessable(_)) => return Ok(None),
            Err(e) => return Err(scm_error(e)),
        };
        let calls = RepoCalls::new(self, token.secret(), &full.owner, &full.name);
        let found = match calls.repository().await {
            Ok(found) => found,
            Err(GithubError::NotFound(_)) => return Ok(None),
            Err(e) => return Err(scm_error(e)),
        };
        let owner = found.full_name.split_once('/').map_or(full.owner.as_str(), |(owner, _)| owner);
        if !owner.eq_ignore_ascii_case(&installation.account_login) {
            // Renamed or transferred away from the installation's account.
            return Ok(None);
        }
        Ok(Some(AppRepository {
            full_name: FullName { owner: owner.to_ascii_lowercase(), name: full.name.clone() },
            description: found.description.unwrap_or_default(),
            private: found.private,
            default_branch: found.default_branch,
        }))
    }

    fn urls(&self, full: &FullName) -> RepoUrls {
        GithubApi::urls(self, full)
    }
}

#[async_trait]
impl InstallationTokens for GithubApi {
    fn clone_url(&self, provider: Provider, repository: &FullName) -> Result<String, RepositoryError> {
        if provider != Provider::Github {
            return Err(RepositoryError::Failed(format!("no {provider} app here")));
        }
        Ok(self.urls(repository).clone_url)
    }

    /// Limited to `repository` and to `contents: read` for a fetch,
    /// `contents: write` for a push.
    async fn token(
        &self,
        provider: Provider,
        installation: &str,
        repository: &FullName,
        access: GitAccess,
    ) -> Result<String, RepositoryError> {
        if provider != Provider::Github {
            return Err(RepositoryError::Failed(format!("no {provider} app here")));
        }
        let id = installation_number(installation).map_err(|e| RepositoryError::Failed(e.to_string()))?;
        let permission = match access {
            GitAccess::Read => CONTENTS_READ,
            GitAccess::Write => CONTENTS_WRITE,
        };
        match self.installation_token(id, &TokenScope::on(&repository.name, &[permission])).await {
            Ok(token) => Ok(token.secret().to_owned()),
            Err(GithubError::NotFound(m) | GithubError::Unauthorized(m)) => Err(RepositoryError::Unauthorized(
                format!("GitHub gave no token for installation {installation} (suspended or removed?): {m}"),
            )),
            Err(e) => Err(RepositoryError::Unreachable(e.to_string())),
        }
    }

    fn forget(&self, provider: Provider, installation: &str) {
        if let (Provider::Github, Ok(id)) = (provider, installation.parse()) {
            self.forget_token(id);
        }
    }
}
