//! The route -> scope table against the router and the OpenAPI document.

use std::collections::BTreeSet;

use axum::http::{Method, StatusCode};
use play_api::route_scopes::{ANY_KEY_ROUTES, PER_OBJECT_ROUTES, ROUTE_SCOPES};
use play_api::testing::TestApp;
use play_model::scopes::{Scope, ScopeSet};

fn concrete(path: &str) -> String {
    path.replace("{id}", "999999").replace("{service}", "web")
}

#[test]
fn every_routed_operation_has_exactly_one_scope_entry() {
    let (_, doc) = play_api::router::api_routes();
    let routed: BTreeSet<(String, String)> =
        play_api::openapi::operations(&doc).into_iter().map(|(m, p)| (m.to_owned(), p)).collect();
    let table: Vec<(String, String)> =
        ROUTE_SCOPES.iter().map(|(m, p, _)| ((*m).to_owned(), (*p).to_owned())).collect();
    let mut table_set: BTreeSet<_> = table.iter().cloned().collect();
    assert_eq!(table.len(), table_set.len(), "duplicate entries in ROUTE_SCOPES");
    for (m, p) in PER_OBJECT_ROUTES.iter().chain(ANY_KEY_ROUTES) {
        assert!(table_set.insert(((*m).to_owned(), (*p).to_owned())), "{m} {p} is in both tables");
    }
    assert_eq!(routed, table_set, "routes and the scope table disagree");
}

#[test]
fn the_openapi_document_names_each_operations_scope() {
    let (_, doc) = play_api::router::api_routes();
    let json = serde_json::to_value(&doc).unwrap();
    for (method, path, scope) in ROUTE_SCOPES {
        let op = &json["paths"][path][method.to_ascii_lowercase()];
        assert_eq!(op["security"][0]["bearer"][0], scope.as_str(), "{method} {path}");
    }
}

/// Every route, called with a key holding each single scope: a scope that
/// does not grant the route is 403 FORBIDDEN; one that does is let through
/// (whatever the handler then says, it is not 401 or 403).
#[tokio::test]
async fn scope_matrix_over_all_routes() {
    let app = TestApp::new().await;
    let mut tokens = Vec::new();
    for scope in Scope::ALL {
        tokens.push((*scope, app.key_for(app.account_id, [*scope].into_iter().collect::<ScopeSet>(), None).await));
    }
    for (method, path, required) in ROUTE_SCOPES {
        let method = Method::from_bytes(method.as_bytes()).unwrap();
        for (held, token) in &tokens {
            let body = matches!(method, Method::POST | Method::PATCH | Method::PUT).then(|| serde_json::json!({}));
            let r = app.request(method.clone(), &concrete(path), Some(token), body).await;
            let granted = [*held].into_iter().collect::<ScopeSet>().grants(*required);
            if granted {
                assert!(
                    r.status != StatusCode::FORBIDDEN && r.status != StatusCode::UNAUTHORIZED,
                    "{method} {path} with {held}: {} {}",
                    r.status,
                    r.text
                );
            } else {
                let details = r.assert_error(StatusCode::FORBIDDEN, "FORBIDDEN");
                assert!(details["scope"][0].as_str().unwrap().contains(required.as_str()), "{details}");
            }
        }
        // And without any credential: 401.
        app.request(method.clone(), &concrete(path), None, None)
            .await
            .assert_error(StatusCode::UNAUTHORIZED, "UNAUTHORIZED");
    }
}
