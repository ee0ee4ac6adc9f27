//! The OpenAPI 3.1 document, generated from the handlers' annotations, with
//! each operation's required scope added from the route table.

use utoipa::openapi::OpenApi as OpenApiDoc;
use utoipa::openapi::security::{Http, HttpAuthScheme, SecurityRequirement, SecurityScheme};
use utoipa::{Modify, OpenApi};

use crate::error::ErrorEnvelope;
use crate::route_scopes::required_scope;

#[derive(Debug, OpenApi)]
#[openapi(
    info(
        title = "play",
        description = "Self-hosted environment platform: Docker Compose in, running environments out. \
                       Every /api route needs `Authorization: Bearer <token>` with the scope named on it."
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

/// Marks every operation with the bearer scheme and its scope from the route
/// table, so the document and the enforcement cannot disagree.
pub fn add_scopes(openapi: &mut OpenApiDoc) {
    for (path, item) in openapi.paths.paths.iter_mut() {
        let operations = [
            ("GET", &mut item.get),
            ("POST", &mut item.post),
            ("PUT", &mut item.put),
            ("PATCH", &mut item.patch),
            ("DELETE", &mut item.delete),
        ];
        for (method, operation) in operations {
            if let (Some(operation), Some(scope)) = (operation, required_scope(method, path)) {
                operation.security = Some(vec![SecurityRequirement::new("bearer", [scope.as_str()])]);
            }
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
