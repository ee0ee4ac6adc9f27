//! The repository gateway `play serve` gives the API and the loops: libgit2
//! over play's policy-checked transport (`play-git`), with its commit
//! cache in the data directory; play's own Git host; the GitHub App's
//! webhook secret.

use std::sync::Arc;

use anyhow::Context;
use play_core::playzone::RepositoryPolicy;
use play_core::repository::RepositoryGateway;
use play_core::scm::github_hook::WebhookSecret;
use play_core::scm::host::SourceHost;
use play_git::builtin::BuiltinHost;
use play_git::hosted::HostedRepositories;
use play_git::{GitConfig, GitGateway};

use crate::args::ServeArgs;
use crate::config::Settings;

/// The repository gateway of this process. Its cache (`<data dir>/git`)
/// holds one bare repository per URL, never a token.
pub fn gateway(
    settings: &Settings,
    args: &ServeArgs,
    policy: &RepositoryPolicy,
) -> anyhow::Result<Arc<dyn RepositoryGateway>> {
    let config = GitConfig {
        timeout: args.repository_timeout.into(),
        max_fetch_bytes: args.repository_max_fetch_bytes,
        hosted_root: args.git_host.then(|| git_host_root(settings, args)),
        ..GitConfig::new(settings.data_dir.join("git"), policy.urls.clone())
    };
    let gateway = GitGateway::new(config).map_err(|e| anyhow::anyhow!("{e}")).context("repository access")?;
    Ok(Arc::new(gateway))
}

/// play's own Git host, unless the operator switched it off
/// (`PLAY_GIT_HOST=false`): repositories under `PLAY_GIT_HOST_ROOT`, URLs
/// under `PLAY_PUBLIC_URL`.
pub fn source_host(settings: &Settings, args: &ServeArgs) -> anyhow::Result<Option<Arc<dyn SourceHost>>> {
    if !args.git_host {
        return Ok(None);
    }
    let root = git_host_root(settings, args);
    std::fs::create_dir_all(&root).with_context(|| format!("cannot create {}", root.display()))?;
    let public = args.public_url.clone().unwrap_or_else(|| format!("http://{}", args.listen));
    Ok(Some(Arc::new(BuiltinHost::new(HostedRepositories::new(root), &public))))
}

/// Where play's own Git host keeps its repositories (`PLAY_GIT_HOST_ROOT`,
/// default `<data dir>/repositories`): the host writes there, and the
/// gateway reads attached Playzones' repositories there.
fn git_host_root(settings: &Settings, args: &ServeArgs) -> std::path::PathBuf {
    args.git_host_root.clone().unwrap_or_else(|| settings.data_dir.join("repositories"))
}

/// The GitHub App's webhook secret, read from
/// `PLAY_GITHUB_WEBHOOK_SECRET_FILE` (one line; the line break is not part
/// of it). An empty file is refused: every signature would be forgeable.
pub fn github_webhook_secret(args: &ServeArgs) -> anyhow::Result<Option<WebhookSecret>> {
    let Some(path) = &args.github_webhook_secret_file else { return Ok(None) };
    let text = std::fs::read_to_string(path)
        .map_err(|e| anyhow::anyhow!("--github-webhook-secret-file {}: {e}", path.display()))?;
    let secret = text.trim_end_matches(['\r', '\n']);
    if secret.is_empty() {
        anyhow::bail!("--github-webhook-secret-file {}: the file is empty", path.display());
    }
    Ok(Some(WebhookSecret::new(secret)))
}
