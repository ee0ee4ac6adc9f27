//! `describe KIND NAME`: the detail view for a person. A Playground shows
//! its status view too (creation step, error, services), its routes and
//! its recent events (`GET /api/playgrounds/{id}/events`). Other kinds
//! show their detail view's fields, nested ones indented.

use chrono::Utc;
use serde_json::Value;

use super::args::DescribeArgs;
use super::client::Client;
use super::kinds::Kind;
use super::lookup;
use super::output::{self, cell};

/// `Key:  value` lines of an object, nested objects and lists indented.
pub fn fields(value: &Value, indent: usize, out: &mut Vec<String>) {
    let pad = " ".repeat(indent);
    match value {
        Value::Object(map) => {
            for (key, v) in map {
                match v {
                    Value::Object(inner) if !inner.is_empty() => {
                        out.push(format!("{pad}{key}:"));
                        fields(v, indent + 2, out);
                    }
                    Value::Array(items) if items.iter().any(|i| i.is_object() || i.is_array()) => {
                        out.push(format!("{pad}{key}:"));
                        fields(v, indent + 2, out);
                    }
                    other => out.push(format!("{pad}{key}: {}", scalar(other))),
                }
            }
        }
        Value::Array(items) => {
            for item in items {
                let mut inner = Vec::new();
                fields(item, indent + 2, &mut inner);
                if let Some(first) = inner.first_mut() {
                    // `- ` in place of the first line's indentation.
                    *first = format!("{pad}- {}", first.trim_start());
                }
                out.extend(inner);
            }
        }
        other => out.push(format!("{pad}{}", scalar(other))),
    }
}

fn scalar(value: &Value) -> String {
    match value {
        Value::Null => "<none>".to_owned(),
        Value::Object(_) => "{}".to_owned(),
        Value::Array(items) if items.is_empty() => "[]".to_owned(),
        Value::String(s) if s.contains('\n') => format!("<{} lines>", s.lines().count()),
        other => cell(other),
    }
}

/// A Playground's description: summary first, then services and routes.
pub fn playground(detail: &Value, status: &Value, events: &Value) -> String {
    let now = Utc::now();
    let get = |v: &Value, k: &str| cell(v.get(k).unwrap_or(&Value::Null));
    let mut out = vec![
        format!("Name:        {}", get(detail, "name")),
        format!("ID:          {}", get(detail, "id")),
        format!("Status:      {}", get(status, "status")),
        format!("Step:        {}", get(status, "creation_step_label")),
    ];
    if status.get("error_message").is_some_and(|e| !e.is_null()) {
        out.push(format!("Error:       {}", super::wait::failure(status)));
    }
    out.extend([
        format!("Playspec:    {} ({})", get(detail, "playspec_name"), get(detail, "playspec_id")),
        format!("Playroom:    {}", get(detail, "playroom_id")),
        format!("Job mode:    {}", get(detail, "job_mode")),
        format!("Project:     {}", get(detail, "compose_project")),
        format!("Created:     {} ({} ago)", get(detail, "created_at"), output::age(&detail["created_at"], now)),
        format!("Expires:     {} ({})", get(detail, "expires_at"), output::until(&detail["expires_at"], now)),
        format!("Generation:  {} (observed {})", get(detail, "generation"), get(detail, "observed_generation")),
    ]);
    if detail.get("needs_rollout").and_then(Value::as_bool) == Some(true) {
        out.push(format!("Needs rollout: {}", get(detail, "outdated_services")));
    }
    let services: Vec<Vec<String>> = status
        .get("services")
        .and_then(Value::as_array)
        .into_iter()
        .flatten()
        .map(|s| vec![get(s, "name"), get(s, "status"), get(s, "health"), get(s, "running")])
        .collect();
    out.push("Services:".to_owned());
    if services.is_empty() {
        out.push("  <none>".to_owned());
    } else {
        let table = output::table(&["NAME", "STATUS", "HEALTH", "RUNNING"], &services);
        out.extend(table.lines().map(|l| format!("  {l}")));
    }
    out.push("URLs:".to_owned());
    match detail.get("urls").and_then(Value::as_object) {
        Some(urls) if !urls.is_empty() => out.extend(urls.iter().map(|(s, u)| format!("  {s}: {}", cell(u)))),
        _ => out.push("  <none>".to_owned()),
    }
    if let Some(routes) = detail.get("routes").filter(|r| r.as_array().is_some_and(|a| !a.is_empty())) {
        out.push("Routes:".to_owned());
        fields(routes, 2, &mut out);
    }
    for key in ["env_overrides", "service_subdomains"] {
        if let Some(map) = detail.get(key).and_then(Value::as_object).filter(|m| !m.is_empty()) {
            out.push(format!("{key}:"));
            out.extend(map.iter().map(|(k, v)| format!("  {k}: {}", cell(v))));
        }
    }
    out.push("Events (newest first):".to_owned());
    let rows: Vec<Vec<String>> = events
        .as_array()
        .into_iter()
        .flatten()
        .map(|e| {
            let actor = match (e.get("actor_type").and_then(Value::as_str), e.get("actor_id").and_then(Value::as_i64)) {
                (Some(kind), Some(id)) => format!("{kind} {id}"),
                (Some(kind), None) => kind.to_owned(),
                _ => String::new(),
            };
            vec![output::age(&e["timestamp"], now), get(e, "event_type"), actor]
        })
        .collect();
    if rows.is_empty() {
        out.push("  <none>".to_owned());
    } else {
        out.extend(output::table(&["AGE", "EVENT", "BY"], &rows).lines().map(|l| format!("  {l}")));
    }
    out.join("\n")
}

pub async fn describe(client: &Client, args: DescribeArgs) -> anyhow::Result<()> {
    let id = lookup::resolve(client, args.kind, &args.name).await?;
    let detail = client.get(&args.kind.path(id)).await?;
    if args.kind == Kind::Playground {
        let status = client.get(&format!("/api/playgrounds/{id}/status")).await?;
        let events = client.get(&format!("/api/playgrounds/{id}/events")).await?;
        println!("{}", playground(&detail, &status, &events));
    } else {
        let names = args.kind.names();
        let kind = if names.manifest.is_empty() { names.singular } else { names.manifest };
        let mut out = vec![format!("Kind: {kind}")];
        fields(&detail, 0, &mut out);
        println!("{}", out.join("\n"));
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    #[test]
    fn nested_fields_are_indented_and_lists_of_objects_itemised() {
        let mut out = Vec::new();
        let value = json!({"name": "r", "edge": {"enabled": true, "tls": "auto"}, "domains": ["a.example.com"],
                           "mounted_files": [{"name": "x", "readonly": true}], "acme_email": null});
        fields(&value, 0, &mut out);
        assert_eq!(
            out,
            [
                "acme_email: <none>",
                "domains: a.example.com",
                "edge:",
                "  enabled: true",
                "  tls: auto",
                "mounted_files:",
                "  - name: x",
                "    readonly: true",
                "name: r",
            ]
        );
    }

    #[test]
    fn a_failed_playground_shows_its_step_error_and_services() {
        let detail = json!({"name": "demo", "id": 4, "playspec_name": "web", "playspec_id": 2, "playroom_id": 1,
            "urls": {"web": "http://web.demo.example.com"}});
        let status = json!({"status": "failed", "creation_step_label": "Pulling Images",
            "error_step_label": "Pulling Images", "error_message": "manifest unknown",
            "services": [{"name": "web", "status": "stopped", "health": null, "running": false}]});
        let events = json!([{"id": 9, "event_type": "playground.error", "timestamp": "2026-01-01T00:00:00Z",
            "actor_type": "system"}, {"id": 3, "event_type": "playground.created", "timestamp": "2026-01-01T00:00:00Z",
            "actor_type": "api_key", "actor_id": 7}]);
        let text = playground(&detail, &status, &events);
        assert!(text.contains("playground.error") && text.contains("api_key 7"), "{text}");
        assert!(text.find("playground.error") < text.find("playground.created"), "newest first: {text}");
        assert!(text.contains("Status:      failed\n"), "{text}");
        assert!(text.contains("Error:       Pulling Images: manifest unknown\n"), "{text}");
        assert!(text.contains("  NAME   STATUS    HEALTH   RUNNING\n  web    stopped   -        false"), "{text}");
        assert!(text.contains("URLs:\n  web: http://web.demo.example.com"), "{text}");
    }
}
