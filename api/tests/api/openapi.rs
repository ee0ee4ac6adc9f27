//! What the OpenAPI document promises, checked on the document itself
//! (`scripts/schemathesis` checks it against a running server).

#![expect(clippy::unwrap_used, reason = "test helpers: a panic is the failure report")]

use play_api::router::api_routes;
use serde_json::Value;

fn document() -> Value {
    serde_json::to_value(api_routes().1).unwrap()
}

fn operations(doc: &Value) -> Vec<(String, String, &Value)> {
    let mut out = Vec::new();
    for (path, item) in doc["paths"].as_object().unwrap() {
        for (method, operation) in item.as_object().unwrap() {
            out.push((method.to_uppercase(), path.clone(), operation));
        }
    }
    out
}

fn refs<'a>(value: &'a Value, out: &mut Vec<&'a str>) {
    match value {
        Value::Object(map) => {
            if let Some(Value::String(target)) = map.get("$ref") {
                out.push(target);
            }
            map.values().for_each(|v| refs(v, out));
        }
        Value::Array(items) => items.iter().for_each(|v| refs(v, out)),
        _ => {}
    }
}

#[test]
fn every_reference_resolves() {
    let doc = document();
    let mut found = Vec::new();
    refs(&doc, &mut found);
    assert!(!found.is_empty());
    for target in found {
        let pointer = target.strip_prefix('#').unwrap_or_else(|| panic!("external reference {target}"));
        assert!(doc.pointer(pointer).is_some(), "dangling reference {target}");
    }
}

/// The statuses the shared layers answer are listed where they can occur,
/// each with the error envelope.
#[test]
fn every_operation_lists_the_shared_errors() {
    let doc = document();
    for (method, path, op) in operations(&doc) {
        let responses = op["responses"].as_object().unwrap();
        let mut expected = vec!["401", "403", "429", "500", "503"];
        if path.contains('{') {
            expected.push("404");
        }
        if op.get("requestBody").is_some() {
            expected.extend(["400", "413", "422"]);
        }
        let has_query = op["parameters"].as_array().is_some_and(|ps| ps.iter().any(|p| p["in"] == "query"));
        if has_query {
            expected.push("422");
        }
        for status in expected {
            let response = responses.get(status).unwrap_or_else(|| panic!("{method} {path} lacks {status}"));
            let response = match response["$ref"].as_str() {
                Some(target) => doc.pointer(target.trim_start_matches('#')).unwrap(),
                None => response,
            };
            assert_eq!(
                response["content"]["application/json"]["schema"]["$ref"], "#/components/schemas/ErrorEnvelope",
                "{method} {path} {status}"
            );
        }
        for (status, response) in responses {
            let described =
                response.get("$ref").is_some() || response["description"].as_str().is_some_and(|d| !d.is_empty());
            assert!(described, "{method} {path} {status} has no description");
        }
        assert!(op["security"][0]["bearer"].is_array(), "{method} {path} has no bearer requirement");
    }
    let rate_limited = &doc["components"]["responses"]["RateLimited"];
    assert!(rate_limited["headers"]["Retry-After"].is_object(), "{rate_limited}");
}

#[test]
fn ids_in_paths_are_positive_integers() {
    let doc = document();
    for (method, path, op) in operations(&doc) {
        for parameter in op["parameters"].as_array().into_iter().flatten() {
            if parameter["in"] == "path" && parameter["name"] == "id" {
                assert_eq!(parameter["schema"]["type"], "integer", "{method} {path}");
                assert_eq!(parameter["schema"]["minimum"], 1, "{method} {path}");
            }
        }
    }
}

/// Create and update share a struct; the create body requires what the
/// handler requires on create.
#[test]
fn create_bodies_require_their_fields() {
    let doc = document();
    for (path, wrapper, property, required) in [
        ("/api/playrooms", "NewPlayroomRequest", "playroom", ["host", "name"]),
        ("/api/playspecs", "NewPlayspecRequest", "playspec", ["base_compose_yaml", "name"]),
        ("/api/import_templates", "NewTemplateRequest", "import_template", ["category_id", "name"]),
    ] {
        let body = &doc["paths"][path]["post"]["requestBody"]["content"]["application/json"]["schema"]["$ref"];
        assert_eq!(body, &format!("#/components/schemas/{wrapper}"), "{path}");
        let input = doc["components"]["schemas"][wrapper]["properties"][property]["$ref"].as_str().unwrap();
        let input = doc.pointer(input.trim_start_matches('#')).unwrap();
        let mut listed: Vec<&str> = input["required"].as_array().unwrap().iter().filter_map(Value::as_str).collect();
        listed.sort_unstable();
        assert_eq!(listed, required, "{path}");
        assert_eq!(input["additionalProperties"], false, "{path}");
    }
}

/// The bodies that may be left out say so.
#[test]
fn optional_bodies_are_not_required() {
    let doc = document();
    for (method, path) in [
        ("post", "/api/playgrounds/{id}/extend_expiration"),
        ("post", "/api/playgrounds/{id}/rollout"),
        ("patch", "/api/import_templates/{id}/toggle_public"),
        ("delete", "/api/import_templates/{id}/destroy_version"),
    ] {
        let body = &doc["paths"][path][method]["requestBody"];
        assert!(body.is_object(), "{method} {path}");
        assert_ne!(body["required"], true, "{method} {path}");
    }
}

/// The schema attribute needs literals: the document's bounds of an
/// extension must still be the ones the server enforces (issue #28: the
/// 30-day cap is defined once, in `play_model::playground::ttl`).
#[test]
fn the_extension_bounds_are_the_servers() {
    use play_model::playground::ttl::MAX_EXTEND_HOURS;
    let doc = document();
    let hours = &doc["components"]["schemas"]["ExtendRequest"]["properties"]["duration_hours"];
    assert_eq!(hours["maximum"].as_i64(), Some(MAX_EXTEND_HOURS), "{hours}");
    assert_eq!(hours["minimum"].as_i64(), Some(1), "{hours}");
}

/// The document says at its top which malformed input is 400 and which 422,
/// and that counts above a maximum are clamped (issue #52, item 8).
#[test]
fn the_document_states_its_choice_of_400_and_422() {
    let doc = document();
    let description = doc["info"]["description"].as_str().unwrap();
    for said in ["400 BAD_REQUEST", "422 VALIDATION_FAILED", "reads the maximum"] {
        assert!(description.contains(said), "{said}: {description}");
    }
}

/// The DELETE of a Playground is documented with the body it answers, the
/// detail (issue #52, item 8: it named the status view).
#[test]
fn a_playgrounds_delete_is_documented_with_its_detail() {
    let doc = document();
    let answer = &doc["paths"]["/api/playgrounds/{id}"]["delete"]["responses"]["202"];
    let schema = &answer["content"]["application/json"]["schema"]["$ref"];
    assert_eq!(schema, "#/components/schemas/PlaygroundDetail", "{answer}");
}
