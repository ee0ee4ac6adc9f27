//! The end of the install flow: the person comes back from GitHub's
//! install page through the app's setup URL with `installation_id` and,
//! because the app asks for user authorization during installation, an
//! OAuth `code`. The `installation_id` alone proves nothing (anyone can
//! type another organisation's id), so play exchanges the code for the
//! person's token and accepts the installation only if it is among the
//! ones that person can see (`GET /user/installations`), as GitHub's
//! documentation advises, and only if the person administers the account
//! it is installed on (issue #49, item 4): GitHub lists an installation
//! to anyone who can read one of its repositories, and connecting it
//! hands its repositories to the play account. A user installation is
//! the person's own (`GET /user`); on an organisation the person's
//! membership must be active with the role `admin`
//! (`GET /user/memberships/orgs/{org}`). The person's token is used for
//! these checks and dropped.

use play_model::scm::host::ConfirmedInstallation;
use reqwest::Method;
use serde::Deserialize;

use crate::api::{GithubApi, InstallationBody, InstallationInfo, send};
use crate::{GithubError, Result};

/// Pages of `GET /user/installations` read at most (100 each).
pub const MAX_PAGES: u32 = 10;

#[derive(Deserialize)]
struct OauthAnswer {
    access_token: Option<String>,
    error: Option<String>,
    error_description: Option<String>,
}

#[derive(Deserialize)]
struct InstallationPage {
    installations: Vec<InstallationBody>,
}

#[derive(Deserialize)]
struct UserBody {
    login: String,
}

/// "Get an organization membership for the authenticated user".
#[derive(Deserialize)]
struct MembershipBody {
    /// `active` or `pending` (invited, not yet joined).
    state: String,
    /// `admin` or `member`.
    role: String,
}

impl GithubApi {
    /// The person's token for OAuth `code`
    /// (`POST {web_url}/login/oauth/access_token`). GitHub answers a bad
    /// or expired code with 200 and an `error` field.
    async fn user_token(&self, code: &str) -> Result<String> {
        let config = self.config();
        let url = format!("{}/login/oauth/access_token", config.web_url);
        let body = serde_json::json!({
            "client_id": config.client_id,
            "client_secret": config.client_secret.0,
            "code": code,
        });
        let request = self.http().post(url).header(reqwest::header::ACCEPT, "application/json").json(&body);
        let answer: OauthAnswer = send(request, "/login/oauth/access_token").await?;
        match (answer.access_token, answer.error) {
            (Some(token), None) => Ok(token),
            (_, error) => Err(GithubError::Unauthorized(format!(
                "/login/oauth/access_token: {} {}",
                error.unwrap_or_default(),
                answer.error_description.unwrap_or_default().chars().take(200).collect::<String>()
            ))),
        }
    }

    /// Installation `id` if the person whose OAuth `code` this is can see
    /// it; `NotFound` otherwise.
    pub async fn confirm_installation(&self, code: &str, id: u64) -> Result<ConfirmedInstallation> {
        let token = self.user_token(code).await?;
        for page in 1..=MAX_PAGES {
            let path = format!("/user/installations?per_page=100&page={page}");
            let found: InstallationPage = send(self.request(Method::GET, &path, &token), "/user/installations").await?;
            let last = found.installations.len() < 100;
            if let Some(mine) = found.installations.into_iter().find(|i| i.id == id) {
                let info = mine.into_info();
                self.check_administers(&token, &info).await?;
                return Ok(ConfirmedInstallation {
                    external_id: info.id.to_string(),
                    organisation: info.account_type == "Organization",
                    account_login: info.account_login,
                    suspended: info.suspended,
                });
            }
            if last {
                break;
            }
        }
        Err(GithubError::NotFound(format!("installation {id} is not one this GitHub user can see")))
    }

    /// `Ok` when the person whose user token this is administers the
    /// account `installation` is on; [`GithubError::NotPermitted`] saying
    /// why otherwise.
    async fn check_administers(&self, token: &str, installation: &InstallationInfo) -> Result<()> {
        let login = &installation.account_login;
        if installation.account_type == "Organization" {
            let path = format!("/user/memberships/orgs/{login}");
            let role = match send::<MembershipBody>(self.request(Method::GET, &path, token), &path).await {
                Ok(m) if m.state == "active" => m.role,
                Ok(m) => format!("{} ({})", m.role, m.state),
                Err(GithubError::NotFound(_)) => "none".into(),
                Err(e) => return Err(e),
            };
            if role == "admin" {
                return Ok(());
            }
            return Err(GithubError::NotPermitted(format!(
                "installation {} is on the GitHub organisation {login}, which you can see but do not administer \
                 (your role there: {role}): connecting it hands the organisation's repositories to this play \
                 account, so an owner of {login} must finish the install",
                installation.id
            )));
        }
        let me: UserBody = send(self.request(Method::GET, "/user", token), "/user").await?;
        if me.login.eq_ignore_ascii_case(login) {
            return Ok(());
        }
        Err(GithubError::NotPermitted(format!(
            "installation {} is on the GitHub user account {login}, not on yours ({}): only {login} can connect it",
            installation.id, me.login
        )))
    }
}
