//! Images built from Playzones: what a dynamic service's build is made of
//! ([`BuildSpec`]), the content key that names its image, and the build
//! context's `.dockerignore` rules ([`dockerignore`]).
//!
//! # The cache key
//!
//! A built image is tagged `play-build:<key>` on the Playroom, where the key
//! is an HMAC-SHA256, under the installation's [`ImageKey`], over everything
//! the image is made of: the account, the repository URL, the commit, the
//! context directory, the Dockerfile path, the target and the build
//! arguments. Keyed, so that no tenant can compute another's image name
//! from a public repository and commit (issue #27, item 7). The same inputs on the same Playroom
//! find the image present and build nothing (a cache hit); any change, a
//! new commit above all, names another image, so the service's config hash
//! changes and a rollout recreates that service only.
//!
//! The account is part of the key so that one tenant never runs an image
//! another tenant's code was built into, and `play-build` is a reserved
//! image name in tenant Compose files and Dockerfiles (`compose::reserved`
//! refuses every spelling the engine normalises to it), so no static
//! service or `FROM` can name one. The built image is labelled with its
//! account, and the reconciler checks that label before it creates a
//! container from a `play-build` image.

pub mod dockerfile;
pub mod dockerignore;
pub mod model;

use std::collections::BTreeMap;

use crate::compose::classify::{ServiceDefinition, ServiceType};
use crate::compose::model::Service;
pub use crate::secrets::ImageKey;

pub use crate::compose::reserved::{BUILD_IMAGE_REPO, is_reserved_image};
/// The largest build context (the archive of the commit's tree under the
/// context directory) play sends to a Playroom.
pub const MAX_CONTEXT_BYTES: u64 = 512 * 1024 * 1024;
/// How much of a build's log is kept (its tail), in bytes.
pub const MAX_LOG_TAIL_BYTES: usize = 16 * 1024;

/// The pin of a Playspec's own repository (its `playzone_id`), beside the
/// pins of its built services: not a service name (Compose names cannot
/// start with `_`), never built, only read for relative paths.
pub const PROJECT_PIN: &str = "_project";

/// The commit a dynamic service of a Playground is built from (or, as
/// [`PROJECT_PIN`], the commit of the Playspec's own repository).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Pin {
    pub service: String,
    pub playzone_id: i64,
    pub branch: String,
    /// Full hex id.
    pub commit: String,
    /// Play created the branch on the remote (`git_config.create_branch`).
    pub created_branch: bool,
    /// The service's env file (its definition's `env_file_path`) at the
    /// commit: key -> value, `$$secret(N)` placeholders as written; empty
    /// without one.
    pub env_file: BTreeMap<String, String>,
}

/// Everything one dynamic service's image is built from.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct BuildSpec {
    pub playzone_id: i64,
    pub branch: String,
    pub commit: String,
    /// The context directory in the repository (`""` for its root), without
    /// `./` or a trailing `/`.
    pub context: String,
    /// The Dockerfile's path inside the context.
    pub dockerfile: String,
    pub target: Option<String>,
    /// Production mode (`compose::svc::production`): the builder targets
    /// the Dockerfile's production stage when it declares one, in place of
    /// `target`. Part of the key only when on, so that the keys of every
    /// other build stay what they were.
    pub production: bool,
    pub args: BTreeMap<String, String>,
    /// See the [module documentation](self).
    pub key: String,
    /// `play-build:<key>`.
    pub image: String,
}

/// The context directory of a `build.context` (or a definition's
/// `workdir`): `.`, `./app/`, `app` become `""`, `app`, `app`. Absolute
/// paths, `..` and URLs are refused (a URL names the repository itself,
/// which the Playzone already does).
pub fn context_dir(context: &str) -> Result<String, String> {
    if context.contains("://") || context.starts_with("git@") {
        return Err(format!("build context `{context}` is a URL: the Playzone names the repository"));
    }
    if context.starts_with('/') {
        return Err(format!("build context `{context}` must be relative to the repository"));
    }
    let parts: Vec<&str> = context.split('/').filter(|p| !p.is_empty() && *p != ".").collect();
    if parts.contains(&"..") {
        return Err(format!("build context `{context}` must not leave the repository"));
    }
    Ok(parts.join("/"))
}

/// `K=v,K2=v2` (the `svc/build_args` label) as pairs; a pair without `=`
/// is refused.
pub fn parse_build_args(text: &str) -> Result<BTreeMap<String, String>, String> {
    let mut out = BTreeMap::new();
    for pair in text.split(',').map(str::trim).filter(|p| !p.is_empty()) {
        let (k, v) = pair.split_once('=').ok_or_else(|| format!("build argument `{pair}` is not KEY=value"))?;
        out.insert(k.trim().to_owned(), v.to_owned());
    }
    Ok(out)
}

fn label<'a>(service: &'a Service, key: &str) -> Option<&'a str> {
    service.labels.get(key).map(String::as_str).filter(|v| !v.is_empty())
}

/// The branch a dynamic service is built from when the Playground does not
/// name one: its `svc/branch` label (else the Playzone's default branch,
/// which the caller knows).
pub fn label_branch(service: &Service) -> Option<&str> {
    label(service, "svc/branch")
}

/// What a build is for: the installation's key names the image, the
/// account and repository are part of it.
#[derive(Clone, Copy, Debug)]
pub struct BuildFor<'a> {
    pub image_key: &'a ImageKey,
    pub account_id: i64,
    pub scm_url: &'a str,
    /// The service runs in production mode.
    pub production: bool,
}

/// The build of `definition` (a dynamic service of the Playspec) from
/// `pin`, as `what` says.
pub fn spec_for(
    what: BuildFor<'_>,
    definition: &ServiceDefinition,
    service: &Service,
    pin: &Pin,
) -> Result<BuildSpec, String> {
    let BuildFor { image_key, account_id, scm_url, production } = what;
    if definition.service_type != ServiceType::Dynamic {
        return Err(format!("service `{}` is not built from source", definition.name));
    }
    let build = service.build.as_ref();
    let context = context_dir(definition.workdir.as_deref().or(build.map(|b| b.context.as_str())).unwrap_or("."))?;
    let dockerfile = definition.dockerfile_path.clone().unwrap_or_else(|| "Dockerfile".to_owned());
    let target = label(service, "svc/build_target").map(str::to_owned).or_else(|| build.and_then(|b| b.target.clone()));
    let mut args: BTreeMap<String, String> = build
        .map(|b| b.args.iter().filter_map(|(k, v)| v.as_ref().map(|v| (k.clone(), v.clone()))).collect())
        .unwrap_or_default();
    if let Some(text) = label(service, "svc/build_args") {
        args.extend(parse_build_args(text)?);
    }
    let account = account_id.to_string();
    let fixed = [account.as_str(), scm_url, &pin.commit, &context, &dockerfile, target.as_deref().unwrap_or("")];
    let count = args.len().to_string();
    let parts = fixed
        .into_iter()
        .chain([count.as_str()])
        .chain(args.iter().flat_map(|(k, v)| [k.as_str(), v.as_str()]))
        .chain(production.then_some("production"))
        .map(str::as_bytes);
    let key = image_key.mac_hex(parts);
    let image = format!("{BUILD_IMAGE_REPO}:{}", &key[..40]);
    Ok(BuildSpec {
        playzone_id: pin.playzone_id,
        branch: pin.branch.clone(),
        commit: pin.commit.clone(),
        context,
        dockerfile,
        target,
        production,
        args,
        key,
        image,
    })
}

/// What a Playground's builds are made from: its pins and the URLs of the
/// Playzones they name. Loaded by the callers of
/// [`desired_for`](crate::playground::desired_for) (which is pure).
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Sources {
    pub pins: Vec<Pin>,
    /// Playzone id -> `scm_url`.
    pub urls: BTreeMap<i64, String>,
    /// The values play generated for the Playground's `$$secret(N)`
    /// placeholders, by variable name (opened: never log them).
    pub generated: BTreeMap<String, String>,
    /// Names the built images ([`ImageKey`]; the installation's, from
    /// `SecretBox::image_key`; the default all-zero key is for tests).
    pub image_key: ImageKey,
}

/// A built service's env file as its container gets it.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct EnvFileValues {
    /// Key -> value, placeholders replaced by the generated values.
    pub values: BTreeMap<String, String>,
    /// The keys whose value play generated, sorted.
    pub generated: Vec<String>,
}

/// The env files of the pinned services, by service, with every
/// `$$secret(N)` placeholder replaced by the Playground's generated value
/// for its key. A placeholder without one (the reconciler generates them
/// before it computes the desired state) is an error: a container must
/// never get the placeholder as a password.
pub fn env_files(sources: &Sources) -> Result<BTreeMap<String, EnvFileValues>, String> {
    let mut out = BTreeMap::new();
    for pin in sources.pins.iter().filter(|p| !p.env_file.is_empty()) {
        let mut file = EnvFileValues::default();
        for (key, value) in &pin.env_file {
            let value =
                match crate::playzone::env_file::secret_placeholder(value) {
                    Some(_) => {
                        file.generated.push(key.clone());
                        sources.generated.get(key).cloned().ok_or_else(|| {
                            format!("service `{}`: no value was generated for `{key}` yet", pin.service)
                        })?
                    }
                    None => value.clone(),
                };
            file.values.insert(key.clone(), value);
        }
        out.insert(pin.service.clone(), file);
    }
    Ok(out)
}

/// The `$$secret(N)` placeholders of `pins`' env files: key -> length (the
/// longest where two files ask for one key differently).
pub fn secret_lengths(pins: &[Pin]) -> BTreeMap<String, usize> {
    let mut out: BTreeMap<String, usize> = BTreeMap::new();
    for (key, value) in pins.iter().flat_map(|p| &p.env_file) {
        if let Some(length) = crate::playzone::env_file::secret_placeholder(value) {
            let entry = out.entry(key.clone()).or_default();
            *entry = (*entry).max(length);
        }
    }
    out
}

/// The builds of the pinned dynamic services of `file` for `playground`
/// (its account, and the production mode it sets for each service), by
/// service. Services not pinned yet are left out.
pub fn specs(
    playground: &crate::playground::model::Playground,
    file: &crate::compose::model::ComposeFile,
    definitions: &[ServiceDefinition],
    sources: &Sources,
) -> Result<BTreeMap<String, BuildSpec>, String> {
    let mut out = BTreeMap::new();
    for pin in &sources.pins {
        // A prebuilt service's pin is for its env files only; the
        // project's pin is no service.
        let (Some(definition), Some(service)) =
            (definitions.iter().find(|d| d.name == pin.service), file.services.get(&pin.service))
        else {
            continue;
        };
        if definition.service_type != ServiceType::Dynamic {
            continue;
        }
        let url = sources.urls.get(&pin.playzone_id).ok_or_else(|| {
            format!("the Playzone (id {}) of service `{}` no longer exists", pin.playzone_id, pin.service)
        })?;
        let setting = playground.service_settings.get(&pin.service).and_then(|s| s.production);
        let what = BuildFor {
            image_key: &sources.image_key,
            account_id: playground.account_id,
            scm_url: url,
            production: crate::compose::svc::production::is_production(setting, service),
        };
        out.insert(pin.service.clone(), spec_for(what, definition, service, pin)?);
    }
    Ok(out)
}

#[cfg(test)]
mod tests;
