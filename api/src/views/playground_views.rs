//! What `/api/playgrounds/{id}/compose`, `env_metadata` and `debug` answers:
//! its response bodies, built from core's records.

use crate::error::{ApiError, ApiResult};
use crate::state::AppState;
use play_model::desired::{EnvSource, Routing, ServiceSpec};
use play_model::edge::model::RouteRow;
use play_model::edge::serving::{self, Decided};
use play_model::model::playroom::Playroom;
use play_model::model::playspec::MountedFile;
use play_model::model::playspec::Playspec;
use play_model::playground::{self, Computed, Playground};
use play_model::routing::Route;
use play_store::edges;
use play_store::playgrounds;
use play_store::playrooms;
use play_store::playspec_files;
use play_store::playspecs;
use serde::Serialize;
use std::collections::{BTreeMap, BTreeSet};
use utoipa::ToSchema;

/// A Playground with what its desired objects are computed from.
#[derive(Clone)]
pub(crate) struct Loaded {
    pub(crate) playground: Playground,
    pub(crate) playspec: Option<Playspec>,
    pub(crate) files: Vec<MountedFile>,
    pub(crate) playroom: Playroom,
    pub(crate) sources: play_model::build::Sources,
}

/// The rows the desired objects of `playground` are computed from.
pub(crate) async fn load_for(
    state: &AppState,
    playground: Playground,
    playroom: Playroom,
) -> play_core::Result<Loaded> {
    let account_id = playground.account_id;
    let (playspec, files) = match playground.playspec_id {
        Some(spec_id) => {
            let playspec = playspecs::get(&state.store, account_id, spec_id).await?;
            let files = playspec_files::list_files(&state.store, spec_id).await?;
            (Some(playspec), files)
        }
        None => (None, Vec::new()),
    };
    let sources = play_store::builds::sources(&state.store, &state.secrets, account_id, playground.id).await?;
    Ok(Loaded { playground, playspec, files, playroom, sources })
}

pub(crate) async fn load(state: &AppState, account_id: i64, id: i64) -> ApiResult<Loaded> {
    let playground = playgrounds::get(&state.store, account_id, id).await?;
    let playroom = playrooms::get(&state.store, account_id, playground.playroom_id).await?;
    Ok(load_for(state, playground, playroom).await?)
}

impl Loaded {
    /// The Compose model and the desired objects, exactly as the reconciler
    /// computes them (on the CPU pool: it parses the Compose text); `Err`
    /// says why the Playground cannot run.
    pub(crate) async fn desired(&self, state: &AppState) -> play_core::Result<Result<Computed, String>> {
        let loaded = self.clone();
        state
            .cpu
            .run(move || {
                playground::desired_for(
                    &loaded.playground,
                    loaded.playspec.as_ref(),
                    &loaded.files,
                    &loaded.playroom,
                    &loaded.sources,
                )
                .map_err(|e| e.to_string())
            })
            .await
    }
}

pub(crate) fn cannot_run(message: String) -> ApiError {
    ApiError::Core(play_core::Error::InvalidState(message))
}

#[derive(Debug, Serialize, ToSchema)]
pub struct ComposeView {
    /// The Compose document of what play runs (see docs/playgrounds.md).
    pub compose_yaml: String,
    pub compose_project: String,
}

#[derive(Debug, Serialize, ToSchema)]
pub struct EnvEntryView {
    pub value: String,
    /// `default` (the Compose `environment:`, a built service's env file),
    /// `production` (a production default of a service in production
    /// mode, for one service's environment), `override` (`env_overrides`,
    /// the service's `env_vars`) or `system` (set by play).
    #[schema(value_type = String)]
    pub source: EnvSource,
}

#[derive(Debug, Serialize, ToSchema)]
pub struct EnvMetadataView {
    pub merged: BTreeMap<String, String>,
    pub metadata: BTreeMap<String, EnvEntryView>,
    pub system_keys: Vec<String>,
    /// Variables whose values play generated: the `$$secret(N)`
    /// placeholders of built services' env files.
    pub generated_keys: Vec<String>,
}

#[derive(Debug, Serialize, ToSchema)]
pub struct Dependency {
    pub service: String,
    pub condition: String,
}

#[derive(Debug, Serialize, ToSchema)]
pub struct ExposureView {
    /// Whether the desired state routes the service through the Playroom's
    /// edge (and the container joins the edge network).
    pub routed: bool,
    /// The route's id in the edge's config: `<compose project>-<service>`.
    pub route_id: Option<String>,
    pub fqdn: Option<String>,
    /// Where users open the service.
    pub url: Option<String>,
    /// `http` or `https`.
    #[schema(schema_with = scheme)]
    pub scheme: Option<&'static str>,
    pub tls: bool,
    /// The complete rule in Traefik's notation, host included.
    pub rule: Option<String>,
    /// The `svc/path_rule`, canonical; `null` routes every path.
    pub path_rule: Option<String>,
    pub port: Option<u16>,
    /// Where the edge sends requests: `<container>:<port>` on the edge network.
    pub upstream: Option<String>,
    /// Whether the edge serves the route under `fqdn` now.
    pub live: bool,
    /// Another Playground on the Playroom holds `fqdn` (it claimed it
    /// first): this route is held back.
    pub held_by_playground_id: Option<i64>,
    /// Other Playgrounds' routes held back because this one holds `fqdn`.
    pub held_back: Vec<HostClaim>,
    /// Why there is no route, or why the edge does not serve it now.
    pub reason: Option<String>,
}

pub(crate) fn scheme() -> utoipa::openapi::Schema {
    play_model::openapi::one_of_or_null(&["http", "https"])
}

/// A route of another Playground.
#[derive(Debug, Clone, Serialize, ToSchema)]
pub struct HostClaim {
    pub playground_id: i64,
    pub service: String,
}

/// What the edge decided on the Playground's Playroom, for `/debug`.
pub(crate) struct EdgeState {
    /// This Playground's routes, by service.
    own: BTreeMap<String, RouteRow>,
    /// Other Playgrounds' routes held back by this one, by host.
    held_back: BTreeMap<String, Vec<HostClaim>>,
    error: Option<String>,
    running: BTreeSet<String>,
}

impl EdgeState {
    pub(crate) async fn load(state: &AppState, playground: &Playground) -> ApiResult<EdgeState> {
        let mut conn = state.store.pool().acquire().await.map_err(play_core::Error::from)?;
        let rows = edges::routes_on(&mut conn, playground.playroom_id).await?;
        drop(conn);
        let mut own = BTreeMap::new();
        let mut held_back: BTreeMap<String, Vec<HostClaim>> = BTreeMap::new();
        for row in rows {
            if row.claim.playground_id == playground.id {
                own.insert(row.claim.service.clone(), row);
            } else if row.conflict_with == Some(playground.id) {
                held_back
                    .entry(row.claim.host)
                    .or_default()
                    .push(HostClaim { playground_id: row.claim.playground_id, service: row.claim.service });
            }
        }
        Ok(EdgeState {
            own,
            held_back,
            error: edges::status(&state.store, playground.playroom_id).await?.and_then(|s| s.error),
            running: playground.services.iter().filter(|s| s.running).map(|s| s.name.clone()).collect(),
        })
    }

    pub(crate) fn exposure(&self, service: &str, route: &Route) -> ExposureView {
        let decided = self.own.get(service).map(|r| Decided {
            host: &r.claim.host,
            live: r.live,
            conflict_with: r.conflict_with,
        });
        let serving = serving::serving(&route.fqdn, self.running.contains(service), decided, self.error.as_deref());
        ExposureView {
            routed: true,
            route_id: Some(route.id.clone()),
            fqdn: Some(route.fqdn.clone()),
            url: Some(route.url.clone()),
            scheme: Some(if route.https { "https" } else { "http" }),
            tls: route.https,
            rule: Some(route.rule.clone()),
            path_rule: route.path_rule.clone(),
            port: Some(route.port),
            upstream: Some(format!("{}:{}", route.upstream, route.port)),
            live: serving.live,
            held_by_playground_id: serving.held_by,
            held_back: self.held_back.get(&route.fqdn).cloned().unwrap_or_default(),
            reason: serving.reason,
        }
    }
}

#[derive(Debug, Serialize, ToSchema)]
pub struct ServiceConfiguration {
    pub name: String,
    /// `static` (an image) or `dynamic` (built from source).
    #[serde(rename = "type")]
    pub service_type: &'static str,
    pub image: Option<String>,
    pub container_name: String,
    pub config_hash: String,
    pub depends_on: Vec<Dependency>,
    /// Host names of the networks the container joins.
    pub networks: Vec<String>,
    pub env_keys: Vec<String>,
    /// `null` when the service is not exposed.
    pub exposure: Option<ExposureView>,
    /// The user's `traefik.*` labels, which play drops.
    pub dropped_labels: Vec<String>,
}

#[derive(Debug, Serialize, ToSchema)]
pub struct DebugView {
    pub id: i64,
    pub compose_project: String,
    pub generated_compose_yaml: Option<String>,
    /// The Playspec's Compose with `${V}` resolved from the Playground's
    /// overrides, before play's additions.
    pub augmented_compose_template: Option<String>,
    pub services_configuration: Vec<ServiceConfiguration>,
    /// Per-service builds of services built from Playzones, once their
    /// commit is pinned: what the image is built from and its name.
    pub build_overrides: BTreeMap<String, BuildOverride>,
    /// Every image a service needed, oldest first: built (with the
    /// duration and the log's tail) or found on the Playroom (cache hit).
    pub build_records: Vec<BuildRecordView>,
    /// One per service with `svc/source_mount` and a pinned commit: the
    /// branch's files at that commit, in a volume the Playground owns,
    /// mounted at `mount_path`.
    pub branch_clones: Vec<BranchClone>,
    /// The shared edge network routed services join.
    pub edge_network: Option<String>,
    /// Why the desired objects cannot be computed (`null` when they can).
    pub error: Option<String>,
}

/// What one service's image is built from.
#[derive(Debug, Serialize, ToSchema)]
pub struct BuildOverride {
    pub playzone_id: i64,
    pub branch: String,
    pub commit: String,
    /// The context directory in the repository (`""`: its root).
    pub context: String,
    pub dockerfile: String,
    pub target: Option<String>,
    pub args: BTreeMap<String, String>,
    /// `play-build:<key>`: the same inputs reuse it on the Playroom.
    pub image: String,
}

/// A service's repository files in a Playground volume: the whole
/// repository (`svc/source_mount`) or one path of it that the Compose
/// file names relatively (`./nginx.conf:/etc/nginx/nginx.conf`).
#[derive(Debug, Serialize, ToSchema)]
pub struct BranchClone {
    pub service: String,
    pub branch: String,
    /// The pinned commit (full hex id): the volume's files are its tree.
    pub commit: String,
    /// The path in the repository: `.` for the whole repository.
    pub path: String,
    /// The volume's name on the Playroom; it changes with the commit.
    pub volume: String,
    /// Where the service's container mounts it.
    pub mount_path: String,
    pub read_only: bool,
}

/// One image a service needed.
#[derive(Debug, Serialize, ToSchema)]
pub struct BuildRecordView {
    pub service: String,
    pub commit: String,
    pub image: String,
    /// The image was on the Playroom: nothing was built.
    pub cache_hit: bool,
    pub succeeded: bool,
    pub duration_ms: i64,
    /// The end of the build's output.
    pub log_tail: String,
    pub created_at: chrono::DateTime<chrono::Utc>,
}

pub(crate) fn condition(c: play_model::compose::model::DependencyCondition) -> String {
    serde_json::to_value(c).ok().and_then(|v| v.as_str().map(str::to_owned)).unwrap_or_default()
}

pub(crate) fn configuration(s: &ServiceSpec, edge: &EdgeState) -> ServiceConfiguration {
    let exposure = match &s.routing {
        Routing::NotExposed => None,
        Routing::Unrouted { reason } => Some(ExposureView {
            routed: false,
            route_id: None,
            fqdn: None,
            url: None,
            scheme: None,
            tls: false,
            rule: None,
            path_rule: None,
            port: None,
            upstream: None,
            live: false,
            held_by_playground_id: None,
            held_back: Vec::new(),
            reason: Some(reason.clone()),
        }),
        Routing::Routed(route) => Some(edge.exposure(&s.name, route)),
    };
    ServiceConfiguration {
        name: s.name.clone(),
        service_type: if s.build { "dynamic" } else { "static" },
        image: Some(s.container.image.clone()).filter(|i| !i.is_empty()),
        container_name: s.container_name.clone(),
        config_hash: s.config_hash.clone(),
        depends_on: s
            .depends_on
            .iter()
            .map(|(service, c)| Dependency { service: service.clone(), condition: condition(*c) })
            .collect(),
        networks: s.container.networks.keys().cloned().collect(),
        env_keys: s.container.env.keys().cloned().collect(),
        exposure,
        dropped_labels: s.dropped_labels.clone(),
    }
}
