//! Which source host a repositories call goes to: play's own Git host, or
//! one of the account's app installations (a GitHub App).
//!
//! # The rule (documented in `docs/repositories.md`)
//!
//! A call on an existing repository goes to the host of the installation
//! that reaches it. A create goes where the request says (`installation_id`,
//! else `provider`), else to the account's only choice: its one active
//! installation, counting play's own host when it is on. With several, the
//! create is refused, naming them: a repository is never created on GitHub
//! (where it may be public to the world) by a default the person did not
//! see.

use std::sync::Arc;

use crate::{Error, Result};
use play_model::scm::host::{InstallableApp, RepoUrls, SourceHost};
use play_model::scm::model::{Installation, InstallationStatus, Provider, Repository};
use play_model::scm::names::FullName;
use play_store::{Store, accounts, repositories};

/// The source hosts this play serves.
#[derive(Clone, Debug, Default)]
pub struct SourceHosts {
    /// play's own Git host; `None`: the operator switched it off.
    pub builtin: Option<Arc<dyn SourceHost>>,
    /// The operator enables play's own host account by account
    /// (`PLAY_GIT_HOST_ACCOUNTS=selected`): only an account switched on
    /// creates repositories there and pushes to them; an account switched
    /// off still reads and deletes its existing ones
    /// ([`SourceHosts::push_refusal`]).
    pub builtin_selected: bool,
    /// The GitHub App; `None`: the operator configured none.
    pub github: Option<Arc<dyn InstallableApp>>,
}

/// What a create names (the API's `provider` and `installation_id`).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Choice {
    pub provider: Option<Provider>,
    pub installation_id: Option<i64>,
}

/// Where a create goes.
#[derive(Clone, Debug)]
pub struct Target {
    /// The app installation; `None`: play's own host, whose installation
    /// is made in the create's transaction.
    pub installation: Option<Installation>,
    pub host: Arc<dyn SourceHost>,
}

fn app_required(message: impl Into<String>) -> Error {
    Error::ScmAppRequired(message.into())
}

impl SourceHosts {
    /// No host at all: every repositories route answers `SCM_APP_REQUIRED`.
    pub fn is_empty(&self) -> bool {
        self.builtin.is_none() && self.github.is_none()
    }

    pub fn app(&self, provider: Provider) -> Option<&Arc<dyn InstallableApp>> {
        match provider {
            Provider::Builtin => None,
            Provider::Github => self.github.as_ref(),
        }
    }

    /// The host of `installation`; `SCM_APP_REQUIRED` when this play no
    /// longer serves its provider, a conflict when the provider suspended
    /// or removed it.
    pub fn of(&self, installation: &Installation) -> Result<Arc<dyn SourceHost>> {
        if installation.status != InstallationStatus::Active {
            return Err(Error::Conflict(format!(
                "the {} installation {} is {} on the provider's side: install or unsuspend the app there",
                installation.provider,
                installation.id,
                installation.status.as_str()
            )));
        }
        match installation.provider {
            Provider::Builtin => self.builtin.clone().ok_or_else(|| {
                app_required("play's own Git host is switched off on this play (PLAY_GIT_HOST): ask the operator")
            }),
            provider => {
                let app = self.app(provider).ok_or_else(|| {
                    app_required(format!("this play has no {provider} app configured any more: ask the operator"))
                })?;
                app.clone().host(installation).map_err(Error::from)
            }
        }
    }

    /// The host that keeps `repository`.
    pub async fn of_repository(&self, store: &Store, repository: &Repository) -> Result<Arc<dyn SourceHost>> {
        let installation = repositories::installation(store, repository.account_id, repository.installation_id).await?;
        self.of(&installation)
    }

    /// Why a push to `repository` is refused, if it is: a repository of
    /// play's own host whose account the operator switched off
    /// (`PLAY_GIT_HOST_ACCOUNTS=selected`, `play accounts git-host NAME
    /// off`). Such an account keeps reading (clone, fetch, attach) and
    /// deleting its repositories, but writes nothing more to the host, so
    /// switching an account off bounds what it stores there. The message
    /// is the one `git push` and the API show.
    pub async fn push_refusal(&self, store: &Store, repository: &Repository) -> Result<Option<String>> {
        if repository.provider != Provider::Builtin || !self.builtin_selected {
            return Ok(None);
        }
        if accounts::git_host_enabled(store, repository.account_id).await? {
            return Ok(None);
        }
        Ok(Some(
            "play's own Git host is switched off for this account: pushes are refused (clone, fetch and \
             delete still work); ask the operator (play accounts git-host <account> on)"
                .to_owned(),
        ))
    }

    /// Where `provider` serves `full`; `None` when this play does not
    /// serve that provider.
    pub fn urls(&self, provider: Provider, full: &FullName) -> Option<RepoUrls> {
        match provider {
            Provider::Builtin => self.builtin.as_ref().map(|host| host.urls(full)),
            provider => self.app(provider).map(|app| app.urls(full)),
        }
    }

    /// The repository a URL names (its clone URL or its web address, with
    /// or without `.git` or a trailing `/`) on a host this play serves:
    /// play's own Git host, or the GitHub App's web URL. `None` for a URL
    /// of anywhere else.
    pub fn locate(&self, url: &str) -> Option<(Provider, FullName)> {
        if let Some(full) = self.builtin.as_ref().and_then(|host| host.repository_at(url)) {
            return Some((Provider::Builtin, full));
        }
        let bare = url.trim_end_matches('/');
        let bare = bare.strip_suffix(".git").unwrap_or(bare);
        let mut segments = bare.rsplit('/');
        let (name, owner) = (segments.next()?, segments.next()?);
        let full = FullName::parse("url", &format!("{owner}/{name}")).ok()?;
        let urls = self.urls(Provider::Github, &full)?;
        let web = urls.html_url.trim_end_matches('/');
        (bare == web).then_some((Provider::Github, full))
    }

    /// Where a create of `account_id` goes; see the [module
    /// documentation](self).
    pub async fn choose(&self, store: &Store, account_id: i64, choice: Choice) -> Result<Target> {
        if let Some(id) = choice.installation_id {
            let installation = repositories::installation(store, account_id, id).await?;
            if choice.provider.is_some_and(|p| p != installation.provider) {
                return Err(Error::field("provider", format!("installation {id} is of {}", installation.provider)));
            }
            let host = self.of(&installation)?;
            let installation = (installation.provider != Provider::Builtin).then_some(installation);
            return Ok(Target { installation, host });
        }
        let apps: Vec<Installation> = repositories::installations(store, account_id)
            .await?
            .into_iter()
            .filter(|i| i.provider != Provider::Builtin && i.status == InstallationStatus::Active)
            .filter(|i| self.app(i.provider).is_some())
            .filter(|i| choice.provider.is_none_or(|p| p == i.provider))
            .collect();
        let mut builtin = self.builtin.clone().filter(|_| choice.provider.is_none_or(|p| p == Provider::Builtin));
        if builtin.is_some() && self.builtin_selected && !accounts::git_host_enabled(store, account_id).await? {
            builtin = None;
        }
        match (builtin, apps.as_slice()) {
            (Some(host), []) => Ok(Target { installation: None, host }),
            (None, [only]) => Ok(Target { host: self.of(only)?, installation: Some(only.clone()) }),
            (None, []) => Err(app_required(match choice.provider {
                Some(Provider::Builtin) if self.builtin.is_some() => "play's own Git host is not enabled for this \
                     account: ask the operator (play accounts git-host <account> on)"
                    .to_owned(),
                Some(Provider::Builtin) => {
                    "play's own Git host is switched off on this play (PLAY_GIT_HOST): ask the operator".to_owned()
                }
                Some(provider) => format!(
                    "this account has no active {provider} installation: connect one \
                     (POST /api/scm_installations/{provider})"
                ),
                None if self.builtin.is_some() => "no source-hosting app is installed on this account, and \
                     play's own Git host is not enabled for it: connect an app, or ask the operator \
                     (play accounts git-host <account> on)"
                    .to_owned(),
                None => "no source-hosting app is installed on this account, and play's own Git host is \
                         switched off (PLAY_GIT_HOST): connect an app or ask the operator"
                    .to_owned(),
            })),
            (builtin, several) => {
                let mut names: Vec<String> =
                    several.iter().map(|i| format!("{} {} on {}", i.provider, i.id, i.account_login)).collect();
                if builtin.is_some() {
                    names.insert(0, "play's own Git host (provider \"builtin\")".to_owned());
                }
                Err(Error::field(
                    "installation_id",
                    format!(
                        "this account can create repositories in several places ({}): name one with \
                         installation_id or provider",
                        names.join(", ")
                    ),
                ))
            }
        }
    }
}
