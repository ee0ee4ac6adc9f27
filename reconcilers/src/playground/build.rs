//! Building a service's image from its pinned commit: the `image_build`
//! step.
//!
//! 1. The Dockerfile and the context's `.dockerignore` are read from the
//!    commit, and the Dockerfile is checked (`check_dockerfile`); then the
//!    commit's tree under the context directory is written to a spool file
//!    as a tar archive, what `.dockerignore` excludes left out as the
//!    `docker` CLI leaves it out (bounded by `MAX_CONTEXT_BYTES`; links
//!    stay links, nothing is checked out on a host path; see
//!    [`super::context`]: never whole in memory).
//! 2. A slot is held meanwhile ([`super::slots`]): a bounded number of
//!    builds and fills per replica and per Playroom.
//! 3. The engine builds it over the Playroom's connection (`POST /build`,
//!    at the Dockerfile's production stage for a service in production
//!    mode that declares one: `compose::svc::production`,
//!    the spool file streamed as the request's body,
//!    no pull: images come from the Playroom or its registries as the
//!    Dockerfile's `FROM` says), tagged `play-build:<key>` and labelled
//!    with the installation, the Playground and the key.
//! 4. A build record keeps the outcome, the duration and the log's tail
//!    (at most [`MAX_LOG_TAIL_BYTES`]); a failed build fails the
//!    Playground at `image_build` with that tail in its `error_message`.
//!
//! The access token never reaches the engine: the archive is the
//! repository's files only, and build arguments are the Compose file's.

use std::collections::{HashMap, VecDeque};
use std::time::{Duration, Instant};

use bollard::Docker;
use bollard::query_parameters::BuildImageOptions;
use futures::StreamExt;
use play_model::build::dockerfile;
use play_model::build::model::NewRecord;
use play_model::build::{BuildSpec, MAX_LOG_TAIL_BYTES};
use play_model::compose::svc::production::production_target;
use play_model::repository::RepositoryGateway;
use play_model::secrets::SecretBox;
use play_store::builds;
use play_store::playground_status::Fence;
use play_store::{Store, playzone_access};

use super::context;
use super::spec::{LABEL_INSTALLATION, LABEL_PLAYGROUND, ServiceSpec};
use crate::host::check_registry;
use crate::{Error, Result};

/// Registry credentials for a build, by registry (`X-Registry-Config`).
pub type BuildAuth = HashMap<String, bollard::auth::DockerCredentials>;

/// The label carrying a built image's content key.
pub const LABEL_BUILD_KEY: &str = "dev.play.build-key";
/// The label carrying the account a built image was built for.
pub const LABEL_BUILD_ACCOUNT: &str = "dev.play.account";

/// What a build needs besides the service.
#[derive(Debug)]
pub struct Builder<'a> {
    pub store: &'a Store,
    pub secrets: &'a SecretBox,
    pub repositories: &'a dyn RepositoryGateway,
    pub fence: Fence<'a>,
    pub playground_id: i64,
    /// The account the images are built for (their label).
    pub account_id: i64,
    pub installation: &'a str,
    pub timeout: Duration,
    /// The Playroom is trusted: its builds may fetch remote `ADD` sources
    /// and pull from any registry.
    pub trusted: bool,
    pub registry_policy: &'a play_model::webhook::UrlPolicy,
    /// The network `RUN` steps join (`PLAY_BUILD_NETWORK`).
    pub network: Option<&'a str>,
    /// Bounds builds and source fills (`super::slots`), by Playroom.
    pub slots: &'a super::slots::Slots,
    /// Where contexts are spooled (`super::context`).
    pub spool_dir: &'a std::path::Path,
    pub playroom_id: i64,
}

impl Builder<'_> {
    /// Builds `service`'s image and records the outcome; an `Err` for a
    /// failed build is [`Error::BuildFailed`] with the log's tail.
    /// `auth` holds the Playspec's registry credentials by registry
    /// (`super::apply::build_auth`), for the images the Dockerfile pulls
    /// (`FROM` a private registry).
    pub async fn build(&self, docker: &Docker, service: &ServiceSpec, auth: &BuildAuth) -> Result<()> {
        let spec = service
            .built
            .as_ref()
            .ok_or_else(|| Error::InvalidSpec(format!("service `{}` has no pinned build", service.name)))?;
        // The timeout counts from when the build holds its slots.
        let slot = self.slots.acquire(self.playroom_id, self.account_id).await;
        let started = Instant::now();
        let outcome = match tokio::time::timeout(self.timeout, self.run(docker, spec, auth, &slot)).await {
            Ok(outcome) => outcome,
            Err(_) => Err(Failure::Build(format!("timed out after {:?}", self.timeout), String::new())),
        };
        let duration_ms = i64::try_from(started.elapsed().as_millis()).unwrap_or(i64::MAX);
        let (succeeded, log_tail) = match &outcome {
            Ok(tail) => (true, tail.clone()),
            Err(Failure::Build(_, tail)) => (false, tail.clone()),
            Err(Failure::Other(_)) => return outcome.map(|_| ()).map_err(|f| f.into_error(&service.name)),
        };
        let record = NewRecord {
            service: service.name.clone(),
            commit: spec.commit.clone(),
            image: spec.image.clone(),
            cache_hit: false,
            succeeded,
            duration_ms,
            log_tail,
        };
        builds::record(self.store, self.fence, self.playground_id, &record).await?.held()?;
        tracing::info!(playground = self.playground_id, service = %service.name, image = %spec.image, succeeded, duration_ms, "image build");
        outcome.map(|_| ()).map_err(|f| f.into_error(&service.name))
    }

    /// Records a cache hit: the service's image was on the Playroom. Once
    /// per Playground, service and image.
    pub async fn note_cache_hit(
        &self,
        service: &ServiceSpec,
        recorded: &[play_model::build::model::BuildRecord],
    ) -> Result<()> {
        let Some(spec) = &service.built else { return Ok(()) };
        if recorded.iter().any(|r| r.service == service.name && r.image == spec.image && r.succeeded) {
            return Ok(());
        }
        let record = NewRecord {
            service: service.name.clone(),
            commit: spec.commit.clone(),
            image: spec.image.clone(),
            cache_hit: true,
            succeeded: true,
            duration_ms: 0,
            log_tail: String::new(),
        };
        builds::record(self.store, self.fence, self.playground_id, &record).await?.held()?;
        tracing::info!(playground = self.playground_id, service = %service.name, image = %spec.image, "image build cache hit");
        Ok(())
    }

    /// Fetches, filters and builds; the log's tail, or why it failed.
    async fn run(
        &self,
        docker: &Docker,
        spec: &BuildSpec,
        auth: &BuildAuth,
        slot: &super::slots::Slot,
    ) -> std::result::Result<String, Failure> {
        let access = playzone_access::access(self.store, self.secrets, spec.playzone_id)
            .await
            .map_err(|e| Failure::Other(Error::Store(e)))?;
        let fetched =
            context::fetch(self.repositories, &access, spec, self.spool_dir, self.playground_id, slot.budget())
                .await
                .map_err(|e| match e {
                context::FetchError::Repository(e) => Failure::Other(Error::Repository(e)),
                context::FetchError::Refused(why) => Failure::Build(why, String::new()),
            })?;
        let mut tail = Tail::default();
        let mut target = spec.target.clone();
        if let Some(text) = &fetched.dockerfile {
            let uses = check_dockerfile(text, spec, self.trusted).map_err(|e| Failure::Build(e, String::new()))?;
            if !self.trusted {
                self.check_registries(docker, &uses, &spec.dockerfile).await?;
            }
            // Production mode: the Dockerfile's production stage, when it
            // declares one, in place of the service's target.
            if spec.production
                && let Some(stage) = production_target(&uses.stages)
            {
                tail.push(&format!("production mode: building the stage `{stage}` of {}", spec.dockerfile));
                target = Some(stage);
            }
        }
        let labels = HashMap::from([
            (LABEL_INSTALLATION.to_owned(), self.installation.to_owned()),
            (LABEL_PLAYGROUND.to_owned(), self.playground_id.to_string()),
            (LABEL_BUILD_KEY.to_owned(), spec.key.clone()),
            (LABEL_BUILD_ACCOUNT.to_owned(), self.account_id.to_string()),
        ]);
        let options = BuildImageOptions {
            dockerfile: spec.dockerfile.clone(),
            t: Some(spec.image.clone()),
            target: target.unwrap_or_default(),
            buildargs: Some(spec.args.clone().into_iter().collect()),
            labels: Some(labels),
            rm: true,
            forcerm: true,
            networkmode: self.network.map(str::to_owned),
            ..Default::default()
        };
        let auth = Some(auth.clone()).filter(|a| !a.is_empty());
        let chunks = fetched
            .spool
            .chunks()
            .await
            .map_err(|e| Failure::Other(Error::Files(format!("reading the spooled build context: {e}"))))?;
        tracing::debug!(playground = self.playground_id, bytes = fetched.bytes, "sending the build context");
        let mut stream = docker.build_image(options, auth, Some(bollard::body_try_stream(chunks)));
        while let Some(item) = stream.next().await {
            match item {
                Ok(info) => {
                    if let Some(text) = &info.stream {
                        tail.push(text);
                    }
                    if let Some(error) = info.error_detail.and_then(|d| d.message).or(info.error) {
                        tail.push(&error);
                        return Err(Failure::Build(error, tail.text()));
                    }
                }
                Err(bollard::errors::Error::DockerStreamError { error }) => {
                    tail.push(&error);
                    return Err(Failure::Build(error, tail.text()));
                }
                Err(e) => return Err(Failure::Other(Error::docker("build image", e))),
            }
        }
        Ok(tail.text())
    }
}

impl Builder<'_> {
    /// The registries of the images the Dockerfile reads that the engine
    /// would pull (absent on it), against the operator's address policy
    /// (`crate::host::check_registry`); a refusal names the line.
    async fn check_registries(
        &self,
        docker: &Docker,
        uses: &dockerfile::Uses,
        path: &str,
    ) -> std::result::Result<(), Failure> {
        for named in &uses.images {
            match docker.inspect_image(&named.written).await {
                Ok(_) => continue,
                Err(e) if crate::docker::status_of(&e) == Some(404) => {}
                Err(e) => return Err(Failure::Other(Error::docker("inspect image", e))),
            }
            if let Err(why) = check_registry(self.registry_policy, &named.written).await {
                return Err(Failure::Build(format!("{path}, line {}: {why}", named.line), String::new()));
            }
        }
        Ok(())
    }
}

/// Why a build did not produce its image.
enum Failure {
    /// The build itself failed (recorded): its reason and the log's tail.
    Build(String, String),
    /// Something around it failed (the repository, the store, the
    /// connection): not a build outcome, nothing recorded.
    Other(Error),
}

impl Failure {
    fn into_error(self, service: &str) -> Error {
        match self {
            Failure::Build(reason, tail) => {
                let tail = tail.trim_end();
                let tail = if tail.is_empty() { String::new() } else { format!("\n--- build log (tail) ---\n{tail}") };
                Error::BuildFailed(format!("the image of service `{service}` failed to build: {}{tail}", reason.trim()))
            }
            Failure::Other(e) => e,
        }
    }
}

/// The last lines of a build's output, at most [`MAX_LOG_TAIL_BYTES`].
#[derive(Default)]
struct Tail {
    lines: VecDeque<String>,
    bytes: usize,
}

impl Tail {
    fn push(&mut self, text: &str) {
        for line in text.lines().map(str::trim_end).filter(|l| !l.is_empty()) {
            let line: String = line.chars().take(1024).collect();
            self.bytes += line.len() + 1;
            self.lines.push_back(line);
            while self.bytes > MAX_LOG_TAIL_BYTES {
                match self.lines.pop_front() {
                    Some(old) => self.bytes -= old.len() + 1,
                    None => break,
                }
            }
        }
    }

    fn text(&self) -> String {
        self.lines.iter().map(String::as_str).collect::<Vec<_>>().join("\n")
    }
}

/// Refuses a Dockerfile that names play's own built images (every
/// Playroom: they hold other accounts' code), or, on an untrusted Playroom,
/// fetches a remote source with `ADD` (the engine's host would fetch any
/// address, the metadata service included). Each refusal names its line.
/// Answers what it uses, for the registry check.
fn check_dockerfile(text: &str, spec: &BuildSpec, trusted: bool) -> std::result::Result<dockerfile::Uses, String> {
    let uses = dockerfile::uses(text, &spec.args);
    let path = &spec.dockerfile;
    if let Some(named) = uses.images.iter().find(|n| n.image.is_official(play_model::build::BUILD_IMAGE_REPO)) {
        return Err(format!(
            "{path}, line {}: `{}` is one of play's built images, which hold other builds' code: start from a \
             public or registry image instead",
            named.line, named.written
        ));
    }
    if !trusted && let Some((line, source)) = uses.remote_adds.first() {
        return Err(format!(
            "{path}, line {line}: `ADD {source}` fetches a remote source on the Playroom's host, which is refused \
             on an untrusted Playroom: download it in a `RUN` step (curl/wget, on the build network) or commit the \
             file to the repository"
        ));
    }
    Ok(uses)
}

/// Checks that the `play-build` image `image` on the engine was built by
/// this installation for `account_id` (its labels): the name alone proves
/// nothing, since a Dockerfile or an older play could have tagged it.
pub async fn check_built_for(docker: &Docker, image: &str, installation: &str, account_id: i64) -> Result<()> {
    let inspected = docker.inspect_image(image).await.map_err(|e| Error::docker("inspect image", e))?;
    let labels = inspected.config.and_then(|c| c.labels).unwrap_or_default();
    let ours = labels.get(LABEL_INSTALLATION).is_some_and(|i| i == installation)
        && labels.get(LABEL_BUILD_ACCOUNT).is_some_and(|a| *a == account_id.to_string());
    if ours {
        Ok(())
    } else {
        Err(Error::InvalidSpec(format!(
            "the image {image} was not built by play for this Playground's account; it is not run (remove it from \
             the Playroom, and play builds the service again)"
        )))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_tail_keeps_the_last_lines_within_its_bound() {
        let mut tail = Tail::default();
        for i in 0..10_000 {
            tail.push(&format!("Step {i}\n"));
        }
        let text = tail.text();
        assert!(text.len() <= MAX_LOG_TAIL_BYTES);
        assert!(text.ends_with("Step 9999"));
    }
}
