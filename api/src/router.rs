//! The whole router, in one place.

use std::sync::Arc;
use std::time::Instant;

use axum::Router;
use axum::extract::{DefaultBodyLimit, MatchedPath, Request, State};
use axum::http::{HeaderMap, HeaderName, HeaderValue, Method, Uri, header};
use axum::middleware::{self, Next};
use axum::response::{IntoResponse, Response};
use axum::routing::{get, post};
use play_core::metrics::{HttpLabels, Metrics};
use tower_http::request_id::{MakeRequestId, PropagateRequestIdLayer, RequestId, SetRequestIdLayer};
use tower_http::trace::{DefaultOnResponse, TraceLayer};
use utoipa::OpenApi;
use utoipa::openapi::OpenApi as OpenApiDoc;
use utoipa_axum::router::OpenApiRouter;
use utoipa_axum::routes;

use crate::auth;
use crate::error::ApiError;
use crate::mcp;
use crate::openapi::{self, ApiDoc};
use crate::recent;
use crate::routes::{
    apply, git, job_result, keys, launch, launch_defaults, ops, playground_events, playground_logs, playground_ops,
    playground_views, playgrounds, playrooms, playspec_files, playspecs, playzone_keys, playzones, repos, schedules,
    scm_github, scm_installations, template_versions, templates, triggers, webhooks,
};
use crate::state::AppState;

const REQUEST_ID: HeaderName = HeaderName::from_static("x-request-id");

/// The authenticated `/api` routes and the OpenAPI document they generate.
pub fn api_routes() -> (Router<AppState>, OpenApiDoc) {
    let (router, mut doc) = OpenApiRouter::with_openapi(ApiDoc::openapi())
        .routes(routes!(keys::create, keys::list))
        .routes(routes!(keys::delete))
        .routes(routes!(keys::sign_in_link))
        .routes(routes!(playrooms::list, playrooms::create))
        .routes(routes!(playrooms::show, playrooms::update, playrooms::delete))
        .routes(routes!(playrooms::generate_ssh_key))
        .routes(routes!(playrooms::test_connection))
        .routes(routes!(playspecs::list, playspecs::create))
        .routes(routes!(playspecs::show, playspecs::update, playspecs::delete))
        .routes(routes!(playspecs::services))
        .routes(routes!(playspecs::validate_compose))
        .routes(routes!(playspec_files::update))
        .routes(routes!(playspec_files::remove))
        .routes(routes!(playspec_files::add_credential))
        .routes(routes!(playspec_files::remove_credential))
        .routes(routes!(playgrounds::list, playgrounds::create))
        .routes(routes!(playgrounds::show, playgrounds::delete))
        .routes(routes!(playgrounds::status))
        .routes(routes!(playgrounds::extend_expiration))
        .routes(routes!(playground_ops::rollout))
        .routes(routes!(playground_ops::hard_restart))
        .routes(routes!(playground_ops::recreate))
        .routes(routes!(playground_ops::sleep))
        .routes(routes!(playground_ops::wake_up))
        .routes(routes!(playground_logs::logs))
        .routes(routes!(playground_events::events))
        .routes(routes!(job_result::job_result))
        .routes(routes!(playground_views::compose))
        .routes(routes!(playground_views::env_metadata))
        .routes(routes!(playground_views::debug))
        .routes(routes!(launch::launch))
        .routes(routes!(templates::list, templates::create))
        .routes(routes!(templates::search))
        .routes(routes!(templates::show, templates::update, templates::delete))
        .routes(routes!(templates::categories))
        .routes(routes!(template_versions::versions))
        .routes(routes!(template_versions::create_version))
        .routes(routes!(template_versions::destroy_version))
        .routes(routes!(template_versions::toggle_public))
        .routes(routes!(template_versions::launch))
        .routes(routes!(playzones::list, playzones::create))
        .routes(routes!(playzones::with_docker_compose))
        .routes(routes!(repos::attach))
        .routes(routes!(playzones::show, playzones::update, playzones::delete))
        .routes(routes!(playzones::sync))
        .routes(routes!(playzone_keys::generate_ssh_key))
        .routes(routes!(playzones::branches))
        .routes(routes!(playzones::env_defaults))
        .routes(routes!(webhooks::list, webhooks::create))
        .routes(routes!(webhooks::show, webhooks::update, webhooks::delete))
        .routes(routes!(webhooks::test))
        .routes(routes!(webhooks::event_types))
        .routes(routes!(webhooks::deliveries))
        .routes(routes!(webhooks::redeliver))
        .routes(routes!(repos::list, repos::create))
        .routes(routes!(repos::show, repos::delete))
        .routes(routes!(launch_defaults::show, launch_defaults::set))
        .routes(routes!(schedules::list))
        .routes(routes!(schedules::show, schedules::update))
        .routes(routes!(schedules::runs))
        .routes(routes!(triggers::list))
        .routes(routes!(triggers::show, triggers::update))
        .routes(routes!(triggers::targets))
        .routes(routes!(scm_installations::list))
        .routes(routes!(scm_github::install))
        .routes(routes!(scm_installations::show, scm_installations::delete))
        .split_for_parts();
    // Uploads carry their own, larger body limit.
    let (upload, upload_doc) = OpenApiRouter::new().routes(routes!(playspec_files::add)).split_for_parts();
    doc.merge(upload_doc);
    // A set of manifests is larger than one request of the API.
    let (applies, apply_doc) =
        OpenApiRouter::new().routes(routes!(apply::apply)).routes(routes!(apply::objects)).split_for_parts();
    doc.merge(apply_doc);
    // A push carries up to 10 MiB of content as JSON text.
    let (pushes, push_doc) =
        OpenApiRouter::new().routes(routes!(repos::push)).routes(routes!(repos::create_and_push)).split_for_parts();
    doc.merge(push_doc);
    openapi::complete(&mut doc);
    let upload = upload.layer(DefaultBodyLimit::max(crate::input::playspec_files::MAX_MOUNTED_FILE_BYTES + 64 * 1024));
    let applies = applies.layer(DefaultBodyLimit::max(apply::MAX_APPLY_BYTES));
    let pushes = pushes.layer(DefaultBodyLimit::max(crate::input::repos::MAX_PUSH_BODY_BYTES));
    (router.merge(upload).merge(applies).merge(pushes), doc)
}

/// The complete application.
pub fn router(state: AppState) -> Router {
    // The routes and their document are built once: the routers below are
    // clones with their own layers (building them twice doubled start-up's
    // allocations, issue #33 item 8).
    let (routes, mut doc) = api_routes();
    let api = routes.clone().route_layer(middleware::from_fn_with_state(state.clone(), auth::authenticate));
    // MCP tools and the dashboard's pages call the same routes in-process,
    // authorised by the same table against the principal `/mcp` or the
    // browser session authenticated (`mcp` and `web::api` say how).
    let in_process = routes
        .route_layer(middleware::from_fn(auth::authorize))
        .layer(middleware::from_fn_with_state(state.renders.writes(), recent::count_writes))
        .layer(DefaultBodyLimit::max(state.config.body_limit))
        .with_state(state.clone());
    // Signed by GitHub, not by a key: outside the authenticated routes, in
    // the same document.
    let (github, github_doc) =
        OpenApiRouter::new().routes(routes!(scm_github::webhook)).routes(routes!(scm_github::setup)).split_for_parts();
    doc.merge(github_doc);
    // Served as the text written once here, which MCP also compiles its
    // tools from; the document itself is not kept.
    let doc = serde_json::to_vec(&doc).map(axum::body::Bytes::from);
    if let Err(e) = &doc {
        tracing::error!(error = %e, "the OpenAPI document cannot be written; /api/openapi.json answers 500");
    }
    let doc = doc.ok();
    let mcp = Router::new()
        .route_service("/mcp", mcp::service(&state, in_process.clone(), doc.clone()))
        .route_layer(middleware::from_fn_with_state(state.clone(), auth::authenticate_caller));
    let public = Router::new()
        .route("/healthz", get(ops::healthz))
        .route("/readyz", get(ops::readyz))
        .route("/metrics", get(ops::metrics))
        .route("/api/openapi.json", get(move || openapi_json(doc.clone())))
        // Git's smart HTTP for play's own Git host: authenticated by the
        // handlers (a key as the Basic password, or none for a public clone).
        .route("/git/{owner}/{repo}/info/refs", get(git::info_refs))
        .route("/git/{owner}/{repo}/{service}", post(git::exchange).layer(DefaultBodyLimit::disable()))
        .merge(github)
        // The dashboard (issue #31), reaching the API as MCP does.
        .merge(crate::web::routes(in_process));
    let metrics = state.metrics.clone();
    let unmatched_metrics = state.metrics.clone();
    let docs = swagger_ui_dist::generate_routes(swagger_ui_dist::ApiDefinition {
        uri_prefix: "/api/docs",
        api_definition: swagger_ui_dist::OpenApiSource::Uri("/api/openapi.json"),
        title: Some("play API"),
    });
    api.merge(public)
        .merge(mcp)
        .route_layer(middleware::from_fn_with_state(metrics, record_http))
        .with_state(state.clone())
        .merge(docs)
        .fallback(move |method: Method, uri: Uri, headers: HeaderMap| {
            not_found(unmatched_metrics.clone(), method, uri, headers)
        })
        .method_not_allowed_fallback(method_not_allowed)
        .layer(
            tower::ServiceBuilder::new()
                .layer(SetRequestIdLayer::new(REQUEST_ID, RequestUuid))
                .layer(
                    TraceLayer::new_for_http()
                        .make_span_with(|request: &Request| {
                            let id = request.headers().get(&REQUEST_ID).and_then(|v| v.to_str().ok()).unwrap_or("");
                            tracing::info_span!("http", method = %request.method(), path = %loggable_path(request.uri().path()), request_id = %id)
                        })
                        .on_response(DefaultOnResponse::new().level(tracing::Level::INFO)),
                )
                .layer(PropagateRequestIdLayer::new(REQUEST_ID))
                // JSON and HTML of a known size, gzipped for clients that
                // take it (crate::compression).
                .layer(middleware::from_fn(crate::compression::gzip))
                // In the same stack as the layers above, so that neither adds
                // a boxed service of its own to every request. The body
                // limit set here is the default: the routes that take larger
                // bodies set their own, closer to the handler, which wins.
                .layer(middleware::from_fn_with_state(state.renders.writes(), recent::count_writes))
                .layer(DefaultBodyLimit::max(state.config.body_limit)),
        )
}

/// `path` as the request log may show it: a sign-in link's secret is cut
/// off (it is a credential until used).
fn loggable_path(path: &str) -> &str {
    const LINK: &str = "/sign-in/link/";
    if path.starts_with(LINK) { &path[..LINK.len()] } else { path }
}

/// A random (v4) UUID for each request without an `x-request-id`, written
/// straight into the header value (tower-http's `MakeRequestUuid` formats
/// a `String` and parses it again).
#[derive(Clone, Copy, Debug)]
struct RequestUuid;

impl MakeRequestId for RequestUuid {
    fn make_request_id<B>(&mut self, _request: &axum::http::Request<B>) -> Option<RequestId> {
        let mut text = [0u8; uuid::fmt::Hyphenated::LENGTH];
        let text = uuid::Uuid::new_v4().hyphenated().encode_lower(&mut text);
        HeaderValue::from_str(text).ok().map(RequestId::new)
    }
}

async fn openapi_json(doc: Option<axum::body::Bytes>) -> Response {
    match doc {
        Some(text) => ([(header::CONTENT_TYPE, HeaderValue::from_static("application/json"))], text).into_response(),
        None => ApiError::Core(play_core::Error::Internal("the OpenAPI document could not be written".into()))
            .into_response(),
    }
}

/// Counts every routed request by method, route template and status.
async fn record_http(
    State(metrics): State<Arc<Metrics>>,
    matched: MatchedPath,
    request: Request,
    next: Next,
) -> Response {
    let started = Instant::now();
    let method = request.method().as_str().to_owned();
    let route = matched.as_str().to_owned();
    let response = next.run(request).await;
    let labels = HttpLabels { method, route, status: response.status().as_u16() };
    metrics.http_requests.get_or_create(&labels).inc();
    metrics.http_duration.get_or_create(&labels).observe(started.elapsed().as_secs_f64());
    response
}

/// 404 for a path nothing routes: the error envelope, or the dashboard's
/// page for a browser asking for a page outside `/api`.
async fn not_found(metrics: Arc<Metrics>, method: Method, uri: Uri, headers: HeaderMap) -> Response {
    let labels = HttpLabels { method: method.as_str().to_owned(), route: "unmatched".into(), status: 404 };
    metrics.http_requests.get_or_create(&labels).inc();
    let wants_page = headers.get(header::ACCEPT).and_then(|v| v.to_str().ok()).is_some_and(|a| a.contains("text/html"));
    if wants_page && !uri.path().starts_with("/api/") {
        return crate::web::no_page().await;
    }
    ApiError::RouteNotFound(uri.path().to_owned()).into_response()
}

async fn method_not_allowed(method: Method) -> ApiError {
    ApiError::MethodNotAllowed(method.to_string())
}
