//! The MCP server at `/mcp` (Streamable HTTP, stateless: every POST stands
//! alone, so any replica can answer it).
//!
//! Guarantees, and how they are kept:
//! - **Same credentials.** `/mcp` sits behind `auth::authenticate_caller`:
//!   no valid bearer key is 401 before MCP sees the request; the per-key
//!   rate limit applies to each POST.
//! - **Same scopes.** Every tool is one routed operation (`tools::TOOLS`).
//!   A call runs that route through the in-process API router, whose
//!   `auth::authorize` checks the route table's scope against the caller's
//!   `Principal`: a tool cannot need a different scope than its route.
//!   The apply tools' route checks a scope per object kind in the set
//!   (`route_scopes::PER_OBJECT_ROUTES`), in the same flow as the REST
//!   call and `play apply` (`play_core::apply`).
//! - **Same rules.** The route's own extractors and handler parse, validate
//!   and write; there is no second implementation of any of it.
//! - **Same errors.** A non-2xx answer becomes an MCP tool error
//!   (`isError: true`) carrying the error envelope
//!   (`{"error": {"code", "message", "details"}}`) as structured content and
//!   as text. For a wrapped body, `details` name the tool's arguments
//!   (`url`, not `webhook_endpoint.url`).
//!
//! Caveat: the Host header is not restricted (rmcp's default allows
//! loopback names only, against DNS rebinding). play is served under its
//! operator's names, and a rebinding page cannot present a bearer key.

mod schema;
pub mod tools;

use std::sync::{Arc, OnceLock};

use axum::Router;
use axum::body::Body as HttpBody;
use axum::body::Bytes;
use axum::http::{Method, Request, StatusCode, header};
use http_body_util::BodyExt;
use rmcp::model::{
    CallToolRequestParams, CallToolResponse, CallToolResult, Implementation, InitializeResult, ListToolsResult,
    PaginatedRequestParams, ServerCapabilities, ServerConfig, Tool, ToolAnnotations,
};
use rmcp::service::RequestContext;
use rmcp::transport::streamable_http_server::session::never::NeverSessionManager;
use rmcp::transport::streamable_http_server::{StreamableHttpServerConfig, StreamableHttpService};
use rmcp::{ErrorData, RoleServer, ServerHandler};
use serde_json::{Map, Value};
use tower::ServiceExt;

use crate::auth::Principal;
use crate::error::ApiError;
use crate::route_scopes::required_scope;
use crate::state::AppState;
use tools::{Body, ToolSpec};

const INSTRUCTIONS: &str = "play runs Docker Compose environments. A Playroom is a Docker host; a Playspec is a \
Compose definition; a Playground is a Playspec running on a Playroom. To run an environment: `launch` with Compose \
YAML, `create_playground: true` and a `playroom_id` (or `launch_template`), then poll `get_playground_status` until \
it is running. To keep a set of objects as declared, `apply` manifest objects (`dry_run: true` first shows what \
would change). Each tool needs the scope its description names. Failed calls are tool errors whose content is the \
API's error envelope: {\"error\": {\"code\", \"message\", \"details\"}}.";

/// The `/mcp` service: rmcp's Streamable HTTP transport over [`PlayMcp`].
/// `api` is the in-process router the tools call and `doc` the text of the
/// OpenAPI document of its routes, which the tools' schemas are taken from
/// (the router module builds both; this one never reaches back for them).
/// `None` when the document could not be written: no tools then.
pub fn service(
    state: &AppState,
    api: Router,
    doc: Option<Bytes>,
) -> StreamableHttpService<PlayMcp, NeverSessionManager> {
    let handler = PlayMcp::new(api, doc);
    let config = StreamableHttpServerConfig::default()
        .with_legacy_session_mode(false)
        .with_json_response(true)
        .with_sse_keep_alive(None)
        .with_max_request_body_bytes(state.config.body_limit)
        .disable_allowed_hosts();
    StreamableHttpService::new(move || Ok(handler.clone()), Arc::new(NeverSessionManager::default()), config)
}

/// The tools, compiled on first use, and the API router they call.
#[derive(Clone, Debug)]
pub struct PlayMcp {
    inner: Arc<Inner>,
}

/// A tool: its operation, the schemas its arguments are checked against
/// and what `tools/list` shows of it.
type CompiledTool = (&'static ToolSpec, schema::Compiled, Tool);

#[derive(Debug)]
struct Inner {
    /// Compiled by the first MCP request, not at start: compiling reads the
    /// whole document as a JSON tree (a few MiB, freed after) and keeps the
    /// tools' schemas, which a `play serve` nobody reaches by MCP would
    /// hold for nothing (issue #33 item 8). Once compiled, never again.
    tools: OnceLock<Vec<CompiledTool>>,
    doc: Option<Bytes>,
    api: Router,
}

impl PlayMcp {
    fn new(api: Router, doc: Option<Bytes>) -> Self {
        PlayMcp { inner: Arc::new(Inner { tools: OnceLock::new(), doc, api }) }
    }

    /// The tools, compiled from the document the first time they are asked
    /// for, once per process (the unit test that builds the document and
    /// compiles every tool runs in a few hundredths of a second, unoptimised).
    fn tools(&self) -> &[CompiledTool] {
        self.inner.tools.get_or_init(|| compile_tools(self.inner.doc.as_deref()))
    }

    /// Runs the tool's route for `principal` and shapes the answer.
    async fn call(
        &self,
        spec: &ToolSpec,
        query: &[String],
        principal: Principal,
        args: Map<String, Value>,
    ) -> CallToolResult {
        let request = match build_request(spec, query, args) {
            Ok(request) => request,
            Err(e) => return tool_error(spec, serde_json::to_value(e.envelope()).unwrap_or_default()),
        };
        let mut request = request;
        request.extensions_mut().insert(principal);
        let Ok(response) = self.inner.api.clone().oneshot(request).await;
        let status = response.status();
        let bytes = match response.into_body().collect().await {
            Ok(collected) => collected.to_bytes(),
            Err(e) => {
                let error = ApiError::Core(play_core::Error::Internal(format!("reading the answer: {e}")));
                return tool_error(spec, serde_json::to_value(error.envelope()).unwrap_or_default());
            }
        };
        let body: Value = if bytes.is_empty() {
            Value::Null
        } else {
            serde_json::from_slice(&bytes).unwrap_or_else(|_| Value::String(String::from_utf8_lossy(&bytes).into()))
        };
        if status.is_success() { success(status, body) } else { tool_error(spec, body) }
    }
}

/// Every tool of [`tools::TOOLS`] that compiles against `doc`: one that
/// does not is left out and logged (unreachable while the schema test
/// passes).
fn compile_tools(doc: Option<&[u8]>) -> Vec<CompiledTool> {
    let doc = match doc.map(serde_json::from_slice::<Value>) {
        Some(Ok(doc)) => doc,
        Some(Err(e)) => {
            tracing::error!(error = %e, "MCP tools left out: the OpenAPI document does not parse");
            return Vec::new();
        }
        None => {
            tracing::error!("MCP tools left out: no OpenAPI document");
            return Vec::new();
        }
    };
    tools::TOOLS
        .iter()
        .filter_map(|spec| match schema::compile(&doc, spec) {
            Ok(compiled) => {
                let tool = describe(spec, &compiled);
                Some((spec, compiled, tool))
            }
            Err(e) => {
                tracing::error!(tool = spec.name, error = %e, "MCP tool left out: no schema");
                None
            }
        })
        .collect()
}

/// What `tools/list` says a per-object route needs (`POST /api/apply`).
const PER_OBJECT_SCOPES: &str = "the scopes of each object's kind (<kind>:read; <kind>:write to write it, \
<kind>:delete to prune it)";

fn describe(spec: &ToolSpec, compiled: &schema::Compiled) -> Tool {
    let per_object = crate::route_scopes::PER_OBJECT_ROUTES.contains(&(spec.method, spec.path));
    let scope = match required_scope(spec.method, spec.path) {
        Some(scope) => scope.as_str(),
        None if per_object => PER_OBJECT_SCOPES,
        None => "?",
    };
    let description = format!("{} Scope: {scope}. REST: {} {}.", spec.description, spec.method, spec.path);
    // Apply may prune: it can delete what its set no longer lists.
    let destructive = spec.method == "DELETE" || spec.path == "/api/apply";
    let annotations = ToolAnnotations::new()
        .read_only(spec.method == "GET")
        .destructive(destructive)
        .idempotent(matches!(spec.method, "GET" | "DELETE"))
        .open_world(false);
    Tool::new(spec.name, description, Arc::new(compiled.input_schema.clone())).annotate(annotations)
}

/// The route's request for these arguments: path parameters substituted,
/// query parameters encoded, the rest as the JSON body.
fn build_request(
    spec: &ToolSpec,
    query: &[String],
    mut args: Map<String, Value>,
) -> Result<Request<HttpBody>, ApiError> {
    let mut path = spec.path.to_owned();
    for name in tools::path_params(spec.path) {
        let value = args.remove(name).ok_or_else(|| ApiError::field(name, "is required"))?;
        let segment = scalar(&value).ok_or_else(|| ApiError::field(name, "must be a string or a number"))?;
        path = path.replace(&format!("{{{name}}}"), &encode_segment(&segment));
    }
    let mut pairs = Vec::new();
    for name in query {
        match args.remove(name) {
            None | Some(Value::Null) => {}
            Some(value) => {
                let text = scalar(&value)
                    .ok_or_else(|| ApiError::field(name.as_str(), "must be a string, number or boolean"))?;
                pairs.push((name.clone(), text));
            }
        }
    }
    if !pairs.is_empty() {
        let encoded = serde_urlencoded::to_string(&pairs).map_err(|e| ApiError::BadRequest(e.to_string()))?;
        path = format!("{path}?{encoded}");
    }
    let body = match spec.body {
        Body::None => {
            if let Some(name) = args.keys().next() {
                return Err(ApiError::field(name.as_str(), "unknown argument"));
            }
            None
        }
        Body::Flat => Some(Value::Object(args)),
        Body::Wrapped(key) => Some(Value::Object(Map::from_iter([(key.to_owned(), Value::Object(args))]))),
    };
    let method = Method::from_bytes(spec.method.as_bytes()).map_err(|e| ApiError::BadRequest(e.to_string()))?;
    let builder = Request::builder().method(method).uri(path);
    let request = match body {
        Some(body) => builder.header(header::CONTENT_TYPE, "application/json").body(HttpBody::from(body.to_string())),
        None => builder.body(HttpBody::empty()),
    };
    request.map_err(|e| ApiError::BadRequest(e.to_string()))
}

fn scalar(value: &Value) -> Option<String> {
    match value {
        Value::String(s) => Some(s.clone()),
        Value::Number(n) => Some(n.to_string()),
        Value::Bool(b) => Some(b.to_string()),
        _ => None,
    }
}

/// Percent-encodes everything but RFC 3986's unreserved characters, so an
/// argument stays one path segment.
fn encode_segment(segment: &str) -> String {
    let mut out = String::with_capacity(segment.len());
    for byte in segment.bytes() {
        if byte.is_ascii_alphanumeric() || matches!(byte, b'-' | b'.' | b'_' | b'~') {
            out.push(char::from(byte));
        } else {
            out.push_str(&format!("%{byte:02X}"));
        }
    }
    out
}

/// A 2xx answer. Structured content must be an object: a list comes back
/// as `{"items": [...]}`, an empty answer (204) as `{"status": 204}`.
fn success(status: StatusCode, body: Value) -> CallToolResult {
    match body {
        Value::Object(_) => CallToolResult::structured(body),
        Value::Null => CallToolResult::structured(serde_json::json!({ "status": status.as_u16() })),
        other => CallToolResult::structured(serde_json::json!({ "items": other })),
    }
}

/// A tool error carrying the envelope; `details` of a wrapped body name
/// the tool's arguments.
fn tool_error(spec: &ToolSpec, mut envelope: Value) -> CallToolResult {
    if let (Body::Wrapped(key), Some(details)) = (spec.body, envelope["error"]["details"].as_object_mut()) {
        let prefix = format!("{key}.");
        let renamed = std::mem::take(details)
            .into_iter()
            .map(|(field, messages)| match field.strip_prefix(&prefix) {
                Some(rest) => (rest.to_owned(), messages),
                None if field == key => ("arguments".to_owned(), messages),
                None => (field, messages),
            })
            .collect();
        *details = renamed;
    }
    if !envelope["error"]["code"].is_string() {
        // Not an envelope (cannot happen for the API's own errors).
        envelope =
            serde_json::json!({"error": {"code": "INTERNAL_ERROR", "message": envelope.to_string(), "details": {}}});
    }
    CallToolResult::structured_error(envelope)
}

impl ServerHandler for PlayMcp {
    fn get_info(&self) -> ServerConfig {
        InitializeResult::new(ServerCapabilities::builder().enable_tools().build())
            .with_server_info(Implementation::new("play", env!("CARGO_PKG_VERSION")))
            .with_instructions(INSTRUCTIONS)
    }

    async fn list_tools(
        &self,
        _request: Option<PaginatedRequestParams>,
        _context: RequestContext<RoleServer>,
    ) -> Result<ListToolsResult, ErrorData> {
        Ok(ListToolsResult::with_all_items(self.tools().iter().map(|(_, _, tool)| tool.clone()).collect()))
    }

    async fn call_tool(
        &self,
        request: CallToolRequestParams,
        context: RequestContext<RoleServer>,
    ) -> Result<CallToolResponse, ErrorData> {
        let Some((spec, compiled, _)) = self.tools().iter().find(|(spec, _, _)| spec.name == request.name) else {
            return Err(ErrorData::invalid_params(format!("unknown tool {}", request.name), None));
        };
        // Set by `auth::authenticate_caller` on the HTTP request, which
        // rmcp hands to the handler as its parts.
        let principal = context
            .extensions
            .get::<axum::http::request::Parts>()
            .and_then(|parts| parts.extensions.get::<Principal>())
            .cloned();
        let Some(principal) = principal else {
            let error = ApiError::Unauthorized("missing, invalid or expired credential");
            return Ok(tool_error(spec, serde_json::to_value(error.envelope()).unwrap_or_default()).into());
        };
        let args = request.arguments.unwrap_or_default();
        Ok(self.call(spec, &compiled.query, principal, args).await.into())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn tools_are_compiled_on_first_use_from_the_documents_text() {
        let doc = serde_json::to_vec(&crate::router::api_routes().1).unwrap();
        let mcp = PlayMcp::new(Router::new(), Some(doc.into()));
        assert!(mcp.inner.tools.get().is_none(), "nothing is compiled before MCP is used");
        assert_eq!(mcp.tools().len(), tools::TOOLS.len());
        assert!(mcp.inner.tools.get().is_some());
    }

    #[test]
    fn without_a_readable_document_there_are_no_tools() {
        assert!(PlayMcp::new(Router::new(), None).tools().is_empty());
        assert!(PlayMcp::new(Router::new(), Some(Bytes::from_static(b"{not json"))).tools().is_empty());
    }

    #[test]
    fn segments_are_encoded() {
        assert_eq!(encode_segment("web-1.x_y~"), "web-1.x_y~");
        assert_eq!(encode_segment("a/b c"), "a%2Fb%20c");
    }
}
