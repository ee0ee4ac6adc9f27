//! Pinning the commit each service built from a Playzone is built from:
//! the first part of the `image_build` step.
//!
//! A service's branch is the Playground's `git_config.branch_name`, else
//! the service's `svc/branch` label, else the Playzone's default branch.
//! Its commit is the one the Playzone's branch index holds; a branch the
//! index does not have (a Playzone not synced yet, a branch pushed since)
//! is looked up on the remote. With `git_config.create_branch`, a branch
//! the remote lacks is created there from `base_branch_name` first.
//!
//! Pins are written once (fenced) and kept until a rollout or hard restart
//! clears them, so every later pass builds, and the API shows, the same
//! commit: the reconciler converges to a commit, not to a moving branch.
//! A branch that moved since shows as `needs_rollout` (the API compares the
//! pins with the index).

use play_model::build::{self, Pin, Sources};
use play_model::compose::ServiceDefinition;
use play_model::compose::classify::ServiceType;
use play_model::desired;
use play_model::model::playroom::Playroom;
use play_model::model::playspec::MountedFile;
use play_model::model::playspec::Playspec;
use play_model::playground::Playground;
use play_model::playzone::model::Playzone;
use play_model::repository::{RemoteRefs, RepositoryAccess};
use play_store::playground_status::Fence;
use play_store::{builds, generated_env};
use play_store::{playzone_access, playzones};

use super::{PlaygroundReconciler, env_files};
use crate::{Error, Result};

/// The Playground's build sources, pinning every dynamic service that has
/// no pin yet, the Playspec's own repository ([`build::PROJECT_PIN`]) and
/// every prebuilt service with an `env_file:` (to the project repository's
/// commit, for its env files). Nothing is read or written for a Playspec
/// without a repository.
pub(super) async fn ensure(
    r: &PlaygroundReconciler,
    fence: Fence<'_>,
    p: &Playground,
    playspec: &Playspec,
    files: &[MountedFile],
    room: &Playroom,
) -> Result<Sources> {
    let definitions = playspec.definitions()?;
    let mut dynamic: Vec<&ServiceDefinition> =
        definitions.iter().filter(|d| d.service_type == ServiceType::Dynamic).collect();
    // The Playspec's own repository is pinned like a service that is never
    // built (at its default branch: no `git_config` names it).
    let project = playspec.playzone_id.map(project_definition);
    dynamic.extend(project.as_ref());
    if dynamic.is_empty() {
        return Ok(Sources::default());
    }
    let mut pinned = builds::pins(&r.store, p.id).await?;
    let unpinned = |name: &str, pinned: &[Pin]| !pinned.iter().any(|pin| pin.service == name);
    let missing: Vec<&&ServiceDefinition> = dynamic.iter().filter(|d| unpinned(&d.name, &pinned)).collect();
    // Only a prebuilt service with an `env_file:` is pinned; one without
    // stays unpinned, and finding that out parses the Compose file. Keys
    // are never interpolated, so a file whose text never says `env_file`
    // has none: it is not parsed again on every pass (issue #33).
    let may_have_env_files = playspec.base_compose_yaml.contains("env_file");
    let statics: Vec<&ServiceDefinition> = definitions
        .iter()
        .filter(|d| d.service_type == ServiceType::Static && may_have_env_files && unpinned(&d.name, &pinned))
        .collect();
    if !missing.is_empty() || !statics.is_empty() {
        let policy = play_model::playground::policy_for(room.trusted, playspec, files);
        let model = desired::model_for(&playspec.base_compose_yaml, &policy, p).map_err(Error::InvalidSpec)?;
        let in_compose = |name: &str| {
            model
                .services
                .get(name)
                .ok_or_else(|| Error::InvalidSpec(format!("service `{name}` is not in the Compose file")))
        };
        let mut pins = Vec::new();
        for definition in missing {
            if definition.name == build::PROJECT_PIN {
                pins.push(pin(r, p, definition, None).await?);
                continue;
            }
            let service = in_compose(&definition.name)?;
            let mut pin = pin(r, p, definition, build::label_branch(service)).await?;
            pin.env_file = env_files::read(r, &definition.name, service, &pin).await?;
            pins.push(pin);
        }
        // A prebuilt service's `env_file:` is the project repository's (the
        // first built service's, else the Playspec's own), at its commit.
        let all: Vec<&Pin> = pinned.iter().chain(&pins).collect();
        let project = model
            .services
            .keys()
            .find_map(|name| all.iter().find(|pin| &pin.service == name && pin.service != build::PROJECT_PIN))
            .or_else(|| all.iter().find(|pin| pin.service == build::PROJECT_PIN))
            .map(|pin| (*pin).clone());
        for definition in statics {
            let (Some(project), service) = (&project, in_compose(&definition.name)?) else { break };
            if service.env_file.is_empty() {
                continue;
            }
            let mut pin = Pin { service: definition.name.clone(), created_branch: false, ..project.clone() };
            pin.env_file = env_files::read(r, &definition.name, service, &pin).await?;
            pins.push(pin);
        }
        if !pins.is_empty() {
            builds::pin(&r.store, fence, p.id, &pins).await?.held()?;
        }
        pinned.extend(pins);
    }
    // Before the desired state: a container never gets a placeholder.
    generated_env::ensure(&r.store, &r.secrets, p.id, &build::secret_lengths(&pinned)).await?;
    Ok(builds::sources(&r.store, &r.secrets, p.account_id, p.id).await?)
}

/// The definition [`pin`] pins the Playspec's own Playzone with: named
/// [`build::PROJECT_PIN`], no label, no `git_config`, never built.
fn project_definition(playzone_id: i64) -> ServiceDefinition {
    ServiceDefinition {
        name: build::PROJECT_PIN.to_owned(),
        service_type: ServiceType::Dynamic,
        playzone_id: Some(playzone_id),
        dockerfile_path: None,
        env_file_path: None,
        workdir: None,
        image: None,
        exposure: play_model::compose::classify::Exposure {
            enabled: false,
            port: None,
            subdomain: None,
            visibility: None,
        },
        repo_url: None,
    }
}

/// Resolves one service's branch to a commit (creating the branch when
/// asked).
async fn pin(
    r: &PlaygroundReconciler,
    p: &Playground,
    definition: &ServiceDefinition,
    label: Option<&str>,
) -> Result<Pin> {
    let name = &definition.name;
    let playzone_id = definition.playzone_id.ok_or_else(|| {
        Error::InvalidSpec(format!(
            "service `{name}` is built from source, but its Playspec links no Playzone: give it a `svc/repo_url` \
             label, or a playzone_id in the Playspec's services"
        ))
    })?;
    let zone = playzones::get(&r.store, p.account_id, playzone_id).await.map_err(|e| match e {
        play_core::Error::NotFound(_) => {
            Error::InvalidSpec(format!("the Playzone (id {playzone_id}) of service `{name}` no longer exists"))
        }
        other => other.into(),
    })?;
    let access = playzone_access::access(&r.store, &r.secrets, playzone_id).await?;
    let git = p.service_settings.get(name).and_then(|s| s.git_config.clone());
    let mut remote: Option<RemoteRefs> = None;
    let branch = match git.as_ref().and_then(|g| g.branch_name.clone()).or_else(|| label.map(str::to_owned)) {
        Some(branch) => branch,
        None => match zone.default_branch.clone() {
            Some(branch) => branch,
            None => {
                let refs = list(r, &access).await?;
                let branch = refs.default_branch.clone().ok_or_else(|| {
                    Error::InvalidSpec(format!("the repository of Playzone `{}` names no default branch", zone.name))
                })?;
                remote = Some(refs);
                branch
            }
        },
    };
    if let Some(commit) = commit_of(r, &zone, &access, &branch, &mut remote).await? {
        if let Some(git) = git.as_ref().filter(|g| g.create_branch) {
            check_existing_branch(r, p, &zone, &access, &mut remote, (name, &branch, &commit), git).await?;
        }
        return Ok(Pin {
            service: name.clone(),
            playzone_id,
            branch,
            commit,
            created_branch: false,
            env_file: Default::default(),
        });
    }
    let Some(git) = git.filter(|g| g.create_branch) else {
        return Err(Error::InvalidSpec(format!(
            "branch `{branch}` of service `{name}` does not exist in Playzone `{}` (push it, or create the \
             Playground with git_config.create_branch and a base_branch_name)",
            zone.name
        )));
    };
    let base = git.base_branch_name.clone().unwrap_or_default();
    let Some(base_commit) = commit_of(r, &zone, &access, &base, &mut remote).await? else {
        return Err(Error::InvalidSpec(format!(
            "base branch `{base}` of service `{name}` does not exist in Playzone `{}`",
            zone.name
        )));
    };
    r.repositories.create_branch(&access, &branch, &base_commit).await.map_err(Error::Repository)?;
    tracing::info!(playground = p.id, service = %name, branch, base, "branch created on the remote");
    Ok(Pin {
        service: name.clone(),
        playzone_id,
        branch,
        commit: base_commit,
        created_branch: true,
        env_file: Default::default(),
    })
}

/// `create_branch` asked for `branch`, and it exists already (the index,
/// or the remote when the index does not know it yet). On the service's
/// first pin (no image was ever built or found for it), it must be at the
/// base branch's commit: otherwise the Playground would silently run
/// whatever someone else's branch holds. It fails at `image_build` naming
/// the branch and both commits, and the remote branch is left as it is.
/// After that first pin the branch is the Playground's own (it created it,
/// and pushes move it): rollouts follow it.
async fn check_existing_branch(
    r: &PlaygroundReconciler,
    p: &Playground,
    zone: &Playzone,
    access: &RepositoryAccess,
    remote: &mut Option<RemoteRefs>,
    (service, branch, commit): (&str, &str, &str),
    git: &play_model::playground::GitConfig,
) -> Result<()> {
    if builds::records(&r.store, p.id).await?.iter().any(|b| b.service == service) {
        return Ok(());
    }
    let base = git.base_branch_name.clone().unwrap_or_default();
    let base_commit = commit_of(r, zone, access, &base, remote).await?;
    if base_commit.as_deref() == Some(commit) {
        return Ok(());
    }
    Err(Error::InvalidSpec(format!(
        "service `{service}`: create_branch asked for branch `{branch}` from `{base}` ({}), but `{branch}` already \
         exists in Playzone `{}` at {commit}, another commit; it is left as it is: choose a new branch name, or \
         leave out create_branch to build the existing branch",
        base_commit.as_deref().unwrap_or("missing"),
        zone.name
    )))
}

/// The commit of `branch`: from the index, else from the remote (listed
/// once per pin).
async fn commit_of(
    r: &PlaygroundReconciler,
    zone: &Playzone,
    access: &RepositoryAccess,
    branch: &str,
    remote: &mut Option<RemoteRefs>,
) -> Result<Option<String>> {
    if let Some(commit) = playzones::branch_commit(&r.store, zone.id, branch).await? {
        return Ok(Some(commit));
    }
    if remote.is_none() {
        *remote = Some(list(r, access).await?);
    }
    Ok(remote.as_ref().and_then(|refs| refs.branches.iter().find(|b| b.name == branch)).map(|b| b.commit.clone()))
}

async fn list(r: &PlaygroundReconciler, access: &RepositoryAccess) -> Result<RemoteRefs> {
    r.repositories.list_branches(access).await.map_err(Error::Repository)
}
