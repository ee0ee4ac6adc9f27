//! The repository gateway `play serve` gives the API and the loops: libgit2
//! over play's policy-checked transport (`play-git`), with its commit
//! cache in the data directory; play's own Git host; the GitHub App's
//! webhook secret.

use std::sync::Arc;

use anyhow::Context;
use play_git::builtin::BuiltinHost;
use play_git::hosted::HostedRepositories;
use play_git::{GitConfig, GitGateway};
use play_github::GithubApi;
use play_model::playzone::RepositoryPolicy;
use play_model::repository::ssh::SshHostKeys;
use play_model::repository::{InstallationTokens, RepositoryGateway};
use play_model::scm::github_hook::WebhookSecret;
use play_model::scm::host::SourceHost;

use crate::args::ServeArgs;
use crate::config::Settings;

/// The repository gateway of this process. Its cache (`<data dir>/git`)
/// holds one bare repository per URL, never a token.
/// A GitHub App's installation tokens let it fetch repositories attached
/// through the app; `host_keys` pins an ssh Playzone's host key at its
/// first contact.
pub fn gateway(
    settings: &Settings,
    args: &ServeArgs,
    policy: &RepositoryPolicy,
    github: Option<Arc<GithubApi>>,
    host_keys: Arc<dyn SshHostKeys>,
) -> anyhow::Result<Arc<dyn RepositoryGateway>> {
    let config = GitConfig {
        timeout: args.repository_timeout.into(),
        max_fetch_bytes: args.repository_max_fetch_bytes,
        max_tree_entries: args.repository_max_tree_entries,
        hosted_root: args.git_host.then(|| git_host_root(settings, args)),
        installation_tokens: github.map(|app| app as Arc<dyn InstallationTokens>),
        ssh_host_keys: Some(host_keys),
        ..GitConfig::new(settings.data_dir.join("git"), policy.urls.clone())
    };
    let gateway = GitGateway::new(config).map_err(|e| anyhow::anyhow!("{e}")).context("repository access")?;
    Ok(Arc::new(gateway))
}

/// play's own Git host, unless the operator switched it off
/// (`PLAY_GIT_HOST=false`): repositories under `PLAY_GIT_HOST_ROOT`, URLs
/// under `PLAY_PUBLIC_URL`, held to the operator's bounds (`PLAY_GIT_MAX_*`).
pub fn source_host(settings: &Settings, args: &ServeArgs) -> anyhow::Result<Option<Arc<dyn SourceHost>>> {
    if !args.git_host {
        return Ok(None);
    }
    let root = git_host_root(settings, args);
    std::fs::create_dir_all(&root).with_context(|| format!("cannot create {}", root.display()))?;
    let public = args.public_url.clone().unwrap_or_else(|| format!("http://{}", args.listen));
    let host = BuiltinHost::new(HostedRepositories::new(root), &public).with_limits(args.git_limits.limits());
    Ok(Some(Arc::new(host)))
}

/// Where play's own Git host keeps its repositories (`PLAY_GIT_HOST_ROOT`,
/// default `<data dir>/repositories`): the host writes there, and the
/// gateway reads attached Playzones' repositories there.
pub fn git_host_root(settings: &Settings, args: &ServeArgs) -> std::path::PathBuf {
    args.git_host_root.clone().unwrap_or_else(|| settings.data_dir.join("repositories"))
}

/// The GitHub App's webhook secret, read from
/// `PLAY_GITHUB_WEBHOOK_SECRET_FILE` (one line; the line break is not part
/// of it). An empty file is refused: every signature would be forgeable.
pub fn github_webhook_secret(args: &ServeArgs) -> anyhow::Result<Option<WebhookSecret>> {
    let Some(path) = &args.github_webhook_secret_file else { return Ok(None) };
    let secret = play_github::app::read_secret_file(path)
        .map_err(|e| anyhow::anyhow!("--github-webhook-secret-file {}: {e}", path.display()))?;
    if secret.is_empty() {
        anyhow::bail!("--github-webhook-secret-file {}: the file is empty", path.display());
    }
    Ok(Some(WebhookSecret::new(secret)))
}

/// The GitHub App accounts install, when the operator configured one
/// (`play_github::AppSettings`: all five settings or none).
/// Its calls go out under the repository policy (`PLAY_REPOSITORY_*`), so a
/// GitHub Enterprise Server on a private network is allowed the same way.
pub fn github_app(args: &ServeArgs, policy: &RepositoryPolicy) -> anyhow::Result<Option<Arc<GithubApi>>> {
    let Some((config, key)) = args.github.settings().load().map_err(anyhow::Error::msg)? else { return Ok(None) };
    Ok(Some(Arc::new(GithubApi::new(config, key, Arc::new(policy.urls.clone()))?)))
}
