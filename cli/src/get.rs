//! `get KIND [NAME]`: a table per kind (columns in [`columns`]), or the
//! API's JSON / YAML; `-w` polls and prints what changed.

use std::collections::BTreeMap;
use std::time::Duration;

use chrono::{DateTime, Utc};
use serde_json::Value;

use super::args::GetArgs;
use super::client::Client;
use super::kinds::Kind;
use super::lookup;
use super::output::{self, Format, age, cell, until};

/// How often `-w` polls.
const WATCH_EVERY: Duration = Duration::from_secs(2);

type Render = fn(&Value, DateTime<Utc>) -> String;

/// A table column: its header, whether only `-o wide` shows it, and its
/// cell.
struct Column(&'static str, bool, Render);

fn text(key: &'static str) -> impl Fn(&Value) -> String {
    move |v| cell(v.get(key).unwrap_or(&Value::Null))
}

/// The columns of `kind`'s table. NAME first; AGE last but for wide-only
/// columns.
fn columns(kind: Kind) -> Vec<Column> {
    let name = Column("NAME", false, |v, _| text("name")(v));
    let id = Column("ID", true, |v, _| text("id")(v));
    let age_col = Column("AGE", false, |v, now| age(v.get("created_at").unwrap_or(&Value::Null), now));
    match kind {
        Kind::Playroom => vec![
            name,
            Column("STATUS", false, |v, _| text("status")(v)),
            Column("HOST", false, |v, _| text("host")(v)),
            Column("PORT", false, |v, _| text("port")(v)),
            Column("USER", false, |v, _| text("user")(v)),
            age_col,
            id,
            Column("TUTORIAL", true, |v, _| text("tutorial")(v)),
        ],
        Kind::Playzone => vec![
            name,
            Column("STATUS", false, |v, _| text("status")(v)),
            Column("BRANCH", false, |v, _| text("default_branch")(v)),
            Column("SYNCED", false, |v, now| age(v.get("last_synced_at").unwrap_or(&Value::Null), now)),
            age_col,
            id,
            Column("PRIVATE", true, |v, _| text("private")(v)),
            Column("URL", true, |v, _| text("scm_url")(v)),
        ],
        Kind::Playspec => vec![
            name,
            Column("PLAYGROUNDS", false, |v, _| text("playground_count")(v)),
            Column("LOCKED", false, |v, _| text("locked")(v)),
            age_col,
            id,
            Column("DESCRIPTION", true, |v, _| text("description")(v)),
        ],
        Kind::Playground => vec![
            name,
            Column("STATUS", false, |v, _| text("status")(v)),
            Column("PLAYSPEC", false, |v, _| text("playspec_name")(v)),
            Column("EXPIRES", false, |v, now| until(v.get("expires_at").unwrap_or(&Value::Null), now)),
            age_col,
            id,
            Column("JOB", true, |v, _| text("job_mode")(v)),
            Column("URLS", true, |v, _| urls(v)),
        ],
        Kind::ImportTemplate => vec![
            name,
            Column("VERSION", false, |v, _| text("latest_version")(v)),
            Column("PUBLIC", false, |v, _| text("public")(v)),
            age_col,
            id,
            Column("CATEGORY", true, |v, _| text("category_id")(v)),
            Column("DESCRIPTION", true, |v, _| text("description")(v)),
        ],
        // Webhook endpoints have no name in the API: NAME is the manifest
        // name when apply created it (filled in by `get`), else `-`.
        Kind::WebhookEndpoint => vec![
            name,
            Column("URL", false, |v, _| text("url")(v)),
            Column("ENABLED", false, |v, _| text("enabled")(v)),
            Column("EVENTS", false, |v, _| v.get("events").and_then(Value::as_array).map_or(0, Vec::len).to_string()),
            Column("FAILURES", false, |v, _| text("failure_count")(v)),
            age_col,
            id,
            Column("DESCRIPTION", true, |v, _| text("description")(v)),
        ],
        // Schedules and triggers are named by their template (filled in by
        // `get`).
        Kind::Schedule => vec![
            name,
            Column("CRON", false, |v, _| text("cron")(v)),
            Column("NEXT", false, |v, now| until(v.get("next_run_at").unwrap_or(&Value::Null), now)),
            Column("LAST SUCCESS", false, |v, now| age(v.get("last_success_at").unwrap_or(&Value::Null), now)),
            Column("FAILURES", false, |v, _| text("consecutive_failures")(v)),
            Column("CONDITION", false, |v, _| text("condition")(v)),
            id,
            Column("TIME ZONE", true, |v, _| text("time_zone")(v)),
            Column("POLICY", true, |v, _| text("concurrency_policy")(v)),
            Column("PLAYROOM", true, |v, _| text("playroom_id")(v)),
        ],
        Kind::Trigger => vec![
            name,
            Column("EVENT", false, |v, _| text("event_type")(v)),
            Column("BRANCH", false, |v, _| text("branch")(v)),
            Column("CONDITION", false, |v, _| text("condition")(v)),
            age_col,
            id,
            Column("REPOSITORY", true, |v, _| text("repo_url")(v)),
            Column("PLAYROOM", true, |v, _| text("playroom_id")(v)),
            Column("MAX", true, |v, _| text("max_playgrounds")(v)),
        ],
        // A run's name is its scheduled time.
        Kind::Run => vec![
            Column("NAME", false, |v, _| text("scheduled_at")(v)),
            Column("STATUS", false, |v, _| text("status")(v)),
            Column("EXIT", false, |v, _| text("exit_code")(v)),
            Column("DURATION", false, |v, _| match v.get("duration_seconds").and_then(Value::as_f64) {
                Some(s) => format!("{s:.1}s"),
                None => "-".to_owned(),
            }),
            Column("PLAYGROUND", false, |v, _| text("playground_id")(v)),
            Column("REASON", false, |v, _| text("reason")(v)),
            id,
        ],
    }
}

/// `service=url,...` of a Playground's `urls` map.
fn urls(v: &Value) -> String {
    match v.get("urls").and_then(Value::as_object) {
        Some(map) if !map.is_empty() => {
            map.iter().map(|(service, url)| format!("{service}={}", cell(url))).collect::<Vec<_>>().join(",")
        }
        _ => "-".to_owned(),
    }
}

/// The rows of `items`, keyed by id (for `-w`), in the API's order.
fn rows(kind: Kind, items: &[Value], wide: bool, now: DateTime<Utc>) -> (Vec<&'static str>, Vec<(i64, Vec<String>)>) {
    let cols: Vec<Column> = columns(kind).into_iter().filter(|c| wide || !c.1).collect();
    let headers = cols.iter().map(|c| c.0).collect();
    let rows = items
        .iter()
        .map(|item| {
            let id = item.get("id").and_then(Value::as_i64).unwrap_or(0);
            (id, cols.iter().map(|c| (c.2)(item, now)).collect())
        })
        .collect();
    (headers, rows)
}

/// The table of `items`.
pub fn render_table(kind: Kind, items: &[Value], wide: bool, now: DateTime<Utc>) -> String {
    let (headers, rows) = rows(kind, items, wide, now);
    let cells: Vec<Vec<String>> = rows.into_iter().map(|(_, r)| r).collect();
    output::table(&headers, &cells)
}

/// The items to show: the list, or the one object NAME stands for.
async fn fetch(client: &Client, kind: Kind, name: Option<&str>) -> anyhow::Result<Value> {
    if kind == Kind::Run {
        let Some(name) = name else {
            anyhow::bail!("runs belong to a schedule: play get runs TEMPLATE (its name, or the schedule's id)");
        };
        let id = lookup::resolve(client, kind, name).await?;
        return client.get(&format!("/api/schedules/{id}/runs?limit=500")).await;
    }
    let mut value = match name {
        Some(name) => {
            let id = lookup::resolve(client, kind, name).await?;
            client.get(&kind.path(id)).await?
        }
        None => client.get(kind.names().api).await?,
    };
    if kind == Kind::WebhookEndpoint {
        name_webhooks(client, &mut value).await?;
    }
    if matches!(kind, Kind::Schedule | Kind::Trigger) {
        name_by_template(client, &mut value).await?;
    }
    Ok(value)
}

/// Schedules and triggers carry their template's id: add its name, so
/// NAME is what `get schedule NAME` takes.
async fn name_by_template(client: &Client, value: &mut Value) -> anyhow::Result<()> {
    let templates = client.get(Kind::ImportTemplate.names().api).await?;
    let names: BTreeMap<i64, String> = templates
        .as_array()
        .into_iter()
        .flatten()
        .filter_map(|t| Some((t.get("id")?.as_i64()?, t.get("name")?.as_str()?.to_owned())))
        .collect();
    add_names(value, "template_id", &names);
    Ok(())
}

/// Webhook endpoints carry no name: add the manifest name of those apply
/// created, so NAME means the same for them as for other kinds.
async fn name_webhooks(client: &Client, value: &mut Value) -> anyhow::Result<()> {
    let names: BTreeMap<i64, String> = lookup::applied(client, Kind::WebhookEndpoint)
        .await?
        .into_iter()
        .filter_map(|a| Some((a.id?, a.name)))
        .collect();
    add_names(value, "id", &names);
    Ok(())
}

/// Sets `name` on each item (of a list, or the one object) that has none,
/// from `names` by the item's `key`.
fn add_names(value: &mut Value, key: &str, names: &BTreeMap<i64, String>) {
    let items: Vec<&mut Value> = match value {
        Value::Array(items) => items.iter_mut().collect(),
        other => vec![other],
    };
    for item in items {
        let id = item.get(key).and_then(Value::as_i64);
        if let (Some(name), Some(map)) = (id.and_then(|id| names.get(&id)), item.as_object_mut()) {
            map.entry("name").or_insert_with(|| Value::String(name.clone()));
        }
    }
}

fn as_items(value: &Value) -> Vec<Value> {
    match value {
        Value::Array(items) => items.clone(),
        other => vec![other.clone()],
    }
}

fn print_once(kind: Kind, value: &Value, format: Format) -> anyhow::Result<()> {
    match format {
        Format::Json => println!("{}", output::json(value)?),
        Format::Yaml => print!("{}", output::yaml(value)?),
        Format::Table | Format::Wide => {
            let items = as_items(value);
            if items.is_empty() {
                eprintln!("No {}s found.", kind);
            } else {
                println!("{}", render_table(kind, &items, format == Format::Wide, Utc::now()));
            }
        }
    }
    Ok(())
}

pub async fn get(client: &Client, args: GetArgs) -> anyhow::Result<()> {
    let value = fetch(client, args.kind, args.name.as_deref()).await?;
    if !args.watch {
        return print_once(args.kind, &value, args.output);
    }
    watch(client, &args, value).await
}

/// Prints every object whose row (or JSON) changed since the last poll,
/// and `deleted` lines for those gone; ends on Ctrl-C.
async fn watch(client: &Client, args: &GetArgs, first: Value) -> anyhow::Result<()> {
    let wide = args.output == Format::Wide;
    let mut last: BTreeMap<i64, String> = BTreeMap::new();
    let mut value = first;
    let mut header_printed = false;
    loop {
        let items = as_items(&value);
        let mut seen = BTreeMap::new();
        for item in &items {
            let id = item.get("id").and_then(Value::as_i64).unwrap_or(0);
            let shown = match args.output {
                Format::Json => serde_json::to_string(item)?,
                Format::Yaml => format!("---\n{}", output::yaml(item)?),
                // Ages change every poll: compare the rows without them.
                Format::Table | Format::Wide => {
                    render_table(args.kind, std::slice::from_ref(item), wide, DateTime::<Utc>::MIN_UTC)
                }
            };
            if last.get(&id) != Some(&shown) {
                match args.output {
                    Format::Json | Format::Yaml => println!("{}", shown.trim_end()),
                    Format::Table | Format::Wide => {
                        let table = render_table(args.kind, std::slice::from_ref(item), wide, Utc::now());
                        let mut lines = table.lines();
                        let header = lines.next().unwrap_or_default();
                        if !header_printed {
                            println!("{header}");
                            header_printed = true;
                        }
                        for line in lines {
                            println!("{line}");
                        }
                    }
                }
            }
            seen.insert(id, shown);
        }
        for id in last.keys().filter(|id| !seen.contains_key(id)) {
            println!("{}/{id} deleted", args.kind);
        }
        last = seen;
        tokio::select! {
            _ = tokio::signal::ctrl_c() => return Ok(()),
            () = tokio::time::sleep(WATCH_EVERY) => {}
        }
        value = match fetch(client, args.kind, args.name.as_deref()).await {
            Ok(value) => value,
            // A watched single object that is gone: say so and stop.
            Err(e) if args.name.is_some() && super::client::is_status(&e, 404) => {
                println!("{} deleted", args.kind);
                return Ok(());
            }
            Err(e) => return Err(e),
        };
    }
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    fn now() -> DateTime<Utc> {
        "2026-01-01T12:00:00Z".parse().unwrap()
    }

    #[test]
    fn playgrounds_show_status_playspec_expiry_and_urls_when_wide() {
        let items = vec![json!({"id": 7, "name": "demo", "status": "running", "playspec_name": "web",
            "job_mode": false, "expires_at": "2026-01-01T20:00:00Z", "created_at": "2026-01-01T11:00:00Z",
            "urls": {"web": "https://web.demo.example.com"}})];
        assert_eq!(
            render_table(Kind::Playground, &items, false, now()),
            "NAME   STATUS    PLAYSPEC   EXPIRES   AGE\ndemo   running   web        in 8h     1h"
        );
        let wide = render_table(Kind::Playground, &items, true, now());
        assert!(wide.starts_with("NAME   STATUS    PLAYSPEC   EXPIRES   AGE   ID   JOB     URLS\n"), "{wide}");
        assert!(wide.ends_with("7    false   web=https://web.demo.example.com"), "{wide}");
    }

    #[test]
    fn runs_show_status_exit_code_duration_and_reason() {
        let items = vec![
            json!({"id": 3, "scheduled_at": "2026-01-01T03:00:00Z", "status": "succeeded", "exit_code": 0,
                "duration_seconds": 4.25, "playground_id": 9, "reason": null}),
            json!({"id": 4, "scheduled_at": "2026-01-01T03:00:02Z", "status": "skipped", "exit_code": null,
                "duration_seconds": null, "playground_id": null, "reason": "forbid"}),
        ];
        let table = render_table(Kind::Run, &items, false, now());
        let lines: Vec<&str> = table.lines().collect();
        assert!(
            lines[0].starts_with("NAME") && lines[0].contains("STATUS") && lines[0].contains("DURATION"),
            "{table}"
        );
        assert!(lines[1].contains("succeeded") && lines[1].contains("4.2s"), "{table}");
        assert!(lines[2].contains("skipped") && lines[2].ends_with("forbid"), "{table}");
    }

    #[test]
    fn every_kind_has_a_name_column_first_and_fills_missing_fields_with_a_dash() {
        for names in super::super::kinds::KINDS {
            let table = render_table(names.kind, &[json!({"id": 1})], true, now());
            assert!(table.starts_with("NAME"), "{table}");
            assert!(table.lines().nth(1).unwrap().starts_with('-'), "{table}");
        }
    }
}
