//! The OpenAPI 3.1 document, generated from the handlers' annotations and
//! completed here from what every operation shares.
//!
//! The document promises what the server answers: every status an
//! operation can return, each error with the envelope schema, and every
//! constraint the server enforces on input. The handlers declare what is
//! theirs (their success status, 409, an operation-specific 404 or 422,
//! the request schema with its bounds); [`complete`] adds what comes from
//! the shared layers, so no handler can forget it:
//!
//! | status | from | on |
//! |---|---|---|
//! | 400 BAD_REQUEST | `extract::Json`, multipart: not JSON, no JSON content type | operations with a request body |
//! | 401 UNAUTHORIZED | `auth::authenticate` | every operation |
//! | 403 FORBIDDEN | `auth::authenticate`: the key lacks the scope | every operation |
//! | 404 RESOURCE_NOT_FOUND | `extract::Id` and the store: no such object | operations with path parameters |
//! | 413 PAYLOAD_TOO_LARGE | the body limit | operations with a request body |
//! | 422 VALIDATION_FAILED | `extract::Json`, `extract::Query`: wrong shape | operations with a body or query parameters |
//! | 429 RATE_LIMITED | `auth::authenticate`, with `Retry-After` | every operation |
//! | 500 INTERNAL_ERROR, 503 SERVICE_UNAVAILABLE | `error::ApiError` | every operation |
//!
//! 405 is not listed on operations: it is the answer to a method the
//! document does not list for a path, with an `Allow` header naming the
//! ones it does. `scripts/schemathesis` checks all of this against a
//! running server.

use utoipa::openapi::header::HeaderBuilder;
use utoipa::openapi::path::{Operation, ParameterIn, PathItem};
use utoipa::openapi::schema::{KnownFormat, ObjectBuilder, SchemaFormat, Type};
use utoipa::openapi::security::{Http, HttpAuthScheme, SecurityRequirement, SecurityScheme};
use utoipa::openapi::{ContentBuilder, OpenApi as OpenApiDoc, Ref, RefOr, Response, ResponseBuilder, Schema};
use utoipa::{Modify, OpenApi};

use crate::error::ErrorEnvelope;
use crate::route_scopes::required_scope;
use play_model::openapi as schemas;

#[derive(Debug, OpenApi)]
#[openapi(
    info(
        title = "play",
        description = "Self-hosted environment platform: Docker Compose in, running environments out. \
                       Every /api route needs `Authorization: Bearer <token>` with the scope named on it. \
                       Errors are `{\"error\": {\"code\", \"message\", \"details\"}}`; `details` maps a field \
                       to its messages. A body that is not JSON (or lacks `Content-Type: application/json`) is \
                       400 BAD_REQUEST; JSON of the wrong shape (a wrong type, a missing or unknown field) and \
                       a query parameter or field that breaks a rule are 422 VALIDATION_FAILED, every refused \
                       field named at once: the contract's 422 is for a request that failed validation, and \
                       its 400 for one play cannot read. A count above a documented maximum (`tail`, \
                       `limit`) reads the maximum instead of being refused."
    ),
    components(schemas(ErrorEnvelope)),
    modifiers(&BearerAuth)
)]
pub struct ApiDoc;

#[derive(Debug)]
struct BearerAuth;

impl Modify for BearerAuth {
    fn modify(&self, openapi: &mut OpenApiDoc) {
        let components = openapi.components.get_or_insert_with(Default::default);
        components.add_security_scheme("bearer", SecurityScheme::Http(Http::new(HttpAuthScheme::Bearer)));
    }
}

/// Which operations a shared error response applies to.
#[derive(Clone, Copy, Debug)]
enum AppliesTo {
    Every,
    /// Operations that read a request body.
    WithBody,
    /// Operations that read a request body or query parameters.
    WithInput,
    /// Operations with path parameters (an id names an object).
    WithPathParameters,
}

/// The error responses of the shared layers: status, component name,
/// description, where they apply.
const SHARED_ERRORS: &[(&str, &str, &str, AppliesTo)] = &[
    (
        "400",
        "BadRequest",
        "BAD_REQUEST: the body is not valid JSON (or multipart), or lacks its content type",
        AppliesTo::WithBody,
    ),
    ("401", "Unauthorized", "UNAUTHORIZED: missing, invalid or expired credential", AppliesTo::Every),
    ("403", "Forbidden", "FORBIDDEN: the key lacks the operation's scope (named in `details.scope`)", AppliesTo::Every),
    (
        "404",
        "NotFound",
        "RESOURCE_NOT_FOUND: no such object in the caller's account (an id that is not a positive integer names none)",
        AppliesTo::WithPathParameters,
    ),
    ("413", "PayloadTooLarge", "PAYLOAD_TOO_LARGE: the body is over the server's limit", AppliesTo::WithBody),
    (
        "422",
        "Unprocessable",
        "VALIDATION_FAILED (`details` maps each refused field to its messages), or LOCKED, INVALID_STATE, \
         QUOTA_EXCEEDED",
        AppliesTo::WithInput,
    ),
    (
        "429",
        "RateLimited",
        "RATE_LIMITED: over the key's request rate; retry after `Retry-After` seconds",
        AppliesTo::Every,
    ),
    ("500", "InternalError", "INTERNAL_ERROR: a server fault (logged; details are not exposed)", AppliesTo::Every),
    ("503", "ServiceUnavailable", "SERVICE_UNAVAILABLE: the database is busy; retry shortly", AppliesTo::Every),
];

/// A field required on create, with its schema there.
type RequiredField = (&'static str, fn() -> RefOr<Schema>);

/// Create and update share a request struct in which every field is
/// optional (an update changes what it names); on create, these fields are
/// required: `(path of the create, wrapper schema, its one property, input
/// schema, required fields)`. The handlers' `fields(.., creating: true)`
/// enforce the same.
const REQUIRED_ON_CREATE: &[(&str, &str, &str, &str, &[RequiredField])] = &[
    (
        "/api/playrooms",
        "PlayroomRequest",
        "playroom",
        "PlayroomInput",
        &[("name", || schemas::display_name().into()), ("host", || schemas::host().into())],
    ),
    (
        "/api/playspecs",
        "PlayspecRequest",
        "playspec",
        "PlayspecInput",
        &[
            ("name", || schemas::display_name().into()),
            ("base_compose_yaml", || ObjectBuilder::new().schema_type(Type::String).into()),
        ],
    ),
    (
        "/api/import_templates",
        "TemplateRequest",
        "import_template",
        "TemplateInput",
        &[("name", || schemas::display_name().into()), ("category_id", || schemas::id().into())],
    ),
];

/// Completes the document generated from the handlers: the bearer
/// requirement with each operation's scope from the route table (so the
/// document and the enforcement cannot disagree), the create bodies, the
/// shared error responses, the bounds of `{id}`, and a description on
/// every response.
pub fn complete(openapi: &mut OpenApiDoc) {
    for (path, wrapper, property, input, required) in REQUIRED_ON_CREATE {
        create_body(openapi, path, wrapper, property, input, required);
    }
    let components = openapi.components.get_or_insert_with(Default::default);
    for (status, name, description, _) in SHARED_ERRORS {
        let mut response = error_response(description);
        if *status == "429" {
            response.headers.insert(
                "Retry-After".into(),
                HeaderBuilder::new()
                    .schema(ObjectBuilder::new().schema_type(Type::Integer).minimum(Some(1)))
                    .description(Some("Seconds to wait before the next request"))
                    .build(),
            );
        }
        components.responses.insert((*name).to_owned(), RefOr::T(response));
    }
    for (path, item) in openapi.paths.paths.iter_mut() {
        for (method, operation) in operations_mut(item) {
            let Some(operation) = operation else { continue };
            if let Some(scope) = required_scope(method, path) {
                operation.security = Some(vec![SecurityRequirement::new("bearer", [scope.as_str()])]);
            } else if crate::route_scopes::checks_per_object(method, path) {
                // Any valid key; the handler checks a scope per object kind,
                // or the route needs none (`route_scopes::ANY_KEY_ROUTES`).
                operation.security = Some(vec![SecurityRequirement::new("bearer", Vec::<String>::new())]);
            }
            positive_ids(operation);
            add_shared_errors(operation);
            describe_responses(operation);
        }
    }
}

/// Points the POST of `path` at `New<wrapper>`: `wrapper` whose `property`
/// is `New<input>`, which is `input` with `required` fields required.
fn create_body(
    openapi: &mut OpenApiDoc,
    path: &str,
    wrapper: &str,
    property: &str,
    input: &str,
    required: &[RequiredField],
) {
    let (new_wrapper, new_input) = (format!("New{wrapper}"), format!("New{input}"));
    let components = openapi.components.get_or_insert_with(Default::default);
    let schemas = &mut components.schemas;
    let (Some(RefOr::T(Schema::Object(wrapper_schema))), Some(RefOr::T(Schema::Object(input_schema)))) =
        (schemas.get(wrapper).cloned(), schemas.get(input).cloned())
    else {
        // The unit test of the document catches a renamed schema.
        return;
    };
    let mut wrapper_schema = wrapper_schema;
    wrapper_schema.properties.insert(property.to_owned(), RefOr::Ref(Ref::from_schema_name(&new_input)));
    let mut input_schema = input_schema;
    for (field, schema) in required {
        input_schema.properties.insert((*field).to_owned(), schema());
        if !input_schema.required.iter().any(|r| r == field) {
            input_schema.required.push((*field).to_owned());
        }
    }
    input_schema.description = Some(format!("The create body's fields; {} are required.", field_list(required)));
    schemas.insert(new_wrapper.clone(), RefOr::T(Schema::Object(wrapper_schema)));
    schemas.insert(new_input, RefOr::T(Schema::Object(input_schema)));
    let post = openapi.paths.paths.get_mut(path).and_then(|item| item.post.as_mut());
    if let Some(body) = post.and_then(|op| op.request_body.as_mut()) {
        for content in body.content.values_mut() {
            content.schema = Some(RefOr::Ref(Ref::from_schema_name(&new_wrapper)));
        }
    }
}

fn field_list(fields: &[RequiredField]) -> String {
    fields.iter().map(|(name, _)| format!("`{name}`")).collect::<Vec<_>>().join(" and ")
}

fn error_response(description: &str) -> Response {
    ResponseBuilder::new()
        .description(description)
        .content("application/json", ContentBuilder::new().schema(Some(Ref::from_schema_name("ErrorEnvelope"))).build())
        .build()
}

fn operations_mut(item: &mut PathItem) -> [(&'static str, Option<&mut Operation>); 5] {
    [
        ("GET", item.get.as_mut()),
        ("POST", item.post.as_mut()),
        ("PUT", item.put.as_mut()),
        ("PATCH", item.patch.as_mut()),
        ("DELETE", item.delete.as_mut()),
    ]
}

/// Ids (`{id}`, `{..._id}`) are positive integers: `extract::Id` and the
/// handlers answer 404 for anything else.
fn positive_ids(operation: &mut Operation) {
    for parameter in operation.parameters.iter_mut().flatten() {
        if parameter.parameter_in == ParameterIn::Path && (parameter.name == "id" || parameter.name.ends_with("_id")) {
            parameter.schema = Some(RefOr::T(
                ObjectBuilder::new()
                    .schema_type(Type::Integer)
                    .format(Some(SchemaFormat::KnownFormat(KnownFormat::Int64)))
                    .minimum(Some(1))
                    .into(),
            ));
        }
    }
}

fn add_shared_errors(operation: &mut Operation) {
    let parameters = operation.parameters.as_deref().unwrap_or_default();
    let has_body = operation.request_body.is_some();
    let has_query = parameters.iter().any(|p| p.parameter_in == ParameterIn::Query);
    let has_path = parameters.iter().any(|p| p.parameter_in == ParameterIn::Path);
    for (status, name, _, applies) in SHARED_ERRORS {
        let applies = match applies {
            AppliesTo::Every => true,
            AppliesTo::WithBody => has_body,
            AppliesTo::WithInput => has_body || has_query,
            AppliesTo::WithPathParameters => has_path,
        };
        if applies {
            // A handler's own declaration of the status says more; keep it.
            operation
                .responses
                .responses
                .entry((*status).to_owned())
                .or_insert_with(|| RefOr::Ref(Ref::from_response_name(*name)));
        }
    }
}

/// OpenAPI requires a description on every response; a handler that gave
/// none gets the status's reason phrase.
fn describe_responses(operation: &mut Operation) {
    for (status, response) in operation.responses.responses.iter_mut() {
        if let RefOr::T(response) = response
            && response.description.is_empty()
        {
            let reason = status.parse::<u16>().ok().and_then(|s| http::StatusCode::from_u16(s).ok());
            response.description = reason.and_then(|s| s.canonical_reason()).unwrap_or("response").to_owned();
        }
    }
}

/// Every `(method, path)` the document lists.
pub fn operations(openapi: &OpenApiDoc) -> Vec<(&'static str, String)> {
    let mut out = Vec::new();
    for (path, item) in &openapi.paths.paths {
        for (method, present) in [
            ("GET", item.get.is_some()),
            ("POST", item.post.is_some()),
            ("PUT", item.put.is_some()),
            ("PATCH", item.patch.is_some()),
            ("DELETE", item.delete.is_some()),
        ] {
            if present {
                out.push((method, path.clone()));
            }
        }
    }
    out
}
