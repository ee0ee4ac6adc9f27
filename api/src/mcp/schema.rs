//! A tool's input schema, read from its operation in the OpenAPI document,
//! so a tool and its route cannot describe different inputs: the path and
//! query parameters, then the body's properties (the wrapped object's for
//! `Body::Wrapped`). Component references are rewritten to `#/$defs/...`
//! and the referenced components (transitively) copied under `$defs`, so
//! each schema stands alone.
//!
//! The schema describes; it does not validate. A call's arguments go to
//! the route's handler, whose parsing and rules answer as they do over
//! REST.

use std::collections::BTreeMap;

use serde_json::{Map, Value, json};

use super::tools::{Body, ToolSpec};

const COMPONENT: &str = "#/components/schemas/";

/// What the dispatcher needs to know besides the table: which arguments
/// are query parameters.
#[derive(Debug, Clone)]
pub struct Compiled {
    pub input_schema: Map<String, Value>,
    pub query: Vec<String>,
}

/// Compiles `spec` against the OpenAPI document (as JSON). An error names
/// what the document lacks: a test compiles every tool.
pub fn compile(doc: &Value, spec: &ToolSpec) -> Result<Compiled, String> {
    let operation = &doc["paths"][spec.path][spec.method.to_ascii_lowercase()];
    if !operation.is_object() {
        return Err(format!("no operation {} {}", spec.method, spec.path));
    }
    let mut properties = Map::new();
    let mut required: Vec<Value> = Vec::new();
    let mut query = Vec::new();
    for parameter in operation["parameters"].as_array().into_iter().flatten() {
        let parameter = resolve(doc, parameter)?;
        let name = parameter["name"].as_str().ok_or("a parameter without a name")?;
        // An optional header tunes how HTTP answers (`Cache-Control` on the
        // Playground reads); a tool call goes without it, as a plain
        // request does.
        if parameter["in"] == "header" && parameter["required"] != true {
            continue;
        }
        let mut schema = parameter["schema"].clone();
        if let (Some(object), Some(description)) = (schema.as_object_mut(), parameter["description"].as_str()) {
            object.entry("description").or_insert_with(|| description.into());
        }
        properties.insert(name.to_owned(), schema);
        match parameter["in"].as_str() {
            Some("path") => required.push(name.into()),
            Some("query") => {
                query.push(name.to_owned());
                if parameter["required"] == true {
                    required.push(name.into());
                }
            }
            other => return Err(format!("parameter {name} in {other:?}")),
        }
    }
    if spec.body != Body::None {
        let body = &operation["requestBody"]["content"]["application/json"]["schema"];
        let mut object = resolve(doc, body)?;
        if let Body::Wrapped(key) = spec.body {
            object = resolve(doc, &object["properties"][key])?;
        }
        for (name, schema) in object["properties"].as_object().into_iter().flatten() {
            if properties.insert(name.clone(), schema.clone()).is_some() {
                return Err(format!("body field {name} collides with a parameter"));
            }
        }
        required.extend(object["required"].as_array().into_iter().flatten().cloned());
    }
    let mut schema = Map::new();
    schema.insert("type".into(), "object".into());
    schema.insert("properties".into(), Value::Object(properties));
    schema.insert("required".into(), Value::Array(required));
    let mut defs = BTreeMap::new();
    let mut schema = Value::Object(schema);
    rewrite_refs(doc, &mut schema, &mut defs)?;
    let Value::Object(mut schema) = schema else { unreachable!("built as an object above") };
    if !defs.is_empty() {
        schema.insert("$defs".into(), json!(defs));
    }
    Ok(Compiled { input_schema: schema, query })
}

/// The schema (or parameter) `value` stands for: a `$ref` followed, and an
/// optional body's `oneOf: [null, X]` read as X.
fn resolve(doc: &Value, value: &Value) -> Result<Value, String> {
    if let Some(reference) = value["$ref"].as_str() {
        let pointer = reference.strip_prefix('#').ok_or_else(|| format!("external reference {reference}"))?;
        let target = doc.pointer(pointer).ok_or_else(|| format!("dangling reference {reference}"))?;
        return resolve(doc, target);
    }
    if let Some(alternatives) = value["oneOf"].as_array() {
        let mut not_null = alternatives.iter().filter(|a| a["type"] != "null");
        if let (Some(only), None) = (not_null.next(), not_null.next()) {
            return resolve(doc, only);
        }
    }
    if value.is_object() { Ok(value.clone()) } else { Err(format!("not a schema: {value}")) }
}

/// Points every component reference in `value` at `$defs`, copying the
/// components it reaches into `defs`.
fn rewrite_refs(doc: &Value, value: &mut Value, defs: &mut BTreeMap<String, Value>) -> Result<(), String> {
    match value {
        Value::Object(map) => {
            if let Some(Value::String(reference)) = map.get_mut("$ref") {
                let name = reference
                    .strip_prefix(COMPONENT)
                    .ok_or_else(|| format!("unexpected reference {reference}"))?
                    .to_owned();
                *reference = format!("#/$defs/{name}");
                if !defs.contains_key(&name) {
                    let mut component = doc["components"]["schemas"][&name].clone();
                    if component.is_null() {
                        return Err(format!("no component {name}"));
                    }
                    defs.insert(name.clone(), Value::Null);
                    rewrite_refs(doc, &mut component, defs)?;
                    defs.insert(name, component);
                }
            }
            for child in map.values_mut() {
                rewrite_refs(doc, child, defs)?;
            }
        }
        Value::Array(items) => {
            for child in items {
                rewrite_refs(doc, child, defs)?;
            }
        }
        _ => {}
    }
    Ok(())
}

#[cfg(test)]
mod tests {

    use super::*;
    use crate::mcp::tools::{TOOLS, find};

    fn doc() -> Value {
        serde_json::to_value(crate::router::api_routes().1).unwrap()
    }

    #[test]
    fn every_tool_compiles_against_the_document() {
        let doc = doc();
        for spec in TOOLS {
            let compiled = compile(&doc, spec).unwrap_or_else(|e| panic!("{}: {e}", spec.name));
            let text = Value::Object(compiled.input_schema).to_string();
            assert!(!text.contains(COMPONENT), "{}: a reference was left: {text}", spec.name);
        }
    }

    #[test]
    fn wrapped_bodies_are_flattened_and_keep_their_required_fields() {
        let compiled = compile(&doc(), find("create_webhook_endpoint").unwrap()).unwrap();
        let schema = Value::Object(compiled.input_schema);
        assert!(schema["properties"]["url"].is_object(), "{schema}");
        let required: Vec<_> = schema["required"].as_array().unwrap().iter().filter_map(Value::as_str).collect();
        assert!(required.contains(&"url") && required.contains(&"events"), "{schema}");
    }

    #[test]
    fn path_and_query_parameters_are_arguments() {
        let compiled = compile(&doc(), find("list_webhook_deliveries").unwrap()).unwrap();
        assert_eq!(compiled.query, ["limit", "before"]);
        let schema = Value::Object(compiled.input_schema);
        assert_eq!(schema["required"], json!(["id"]));
        assert!(schema["properties"]["limit"].is_object());
    }
}
