//! `launch` (POST /api/launch: a Playspec, and a Playground, from one
//! Compose file) with its progress display, and `extend`.

use std::io::IsTerminal as _;
use std::path::Path;
use std::time::Instant;

use anyhow::{Context as _, bail};
use reqwest::Method;
use serde_json::{Value, json};

use super::args::{ExtendArgs, LaunchArgs};
use super::client::Client;
use super::kinds::Kind;
use super::output::{self, ReportFormat, cell};
use super::{lookup, manifest, wait};
use crate::duration::HumanDuration;

/// A name from a directory name: lowercase letters, digits and `-`, as
/// the API's names allow; `None` when nothing usable is left.
pub fn name_from(dir: &str) -> Option<String> {
    let mapped: String =
        dir.to_ascii_lowercase().chars().map(|c| if c.is_ascii_alphanumeric() { c } else { '-' }).collect();
    let trimmed: String = mapped.trim_matches('-').chars().take(63).collect();
    let trimmed = trimmed.trim_end_matches('-').to_owned();
    (!trimmed.is_empty()).then_some(trimmed)
}

fn default_name(file: &Path) -> anyhow::Result<String> {
    let absolute = std::fs::canonicalize(file).with_context(|| format!("cannot read {}", file.display()))?;
    absolute
        .parent()
        .and_then(|d| d.file_name())
        .and_then(|n| n.to_str())
        .and_then(name_from)
        .context("cannot derive a name from the Compose file's directory; give one with --name")
}

/// Whether to draw a spinner: stdout is a terminal and `NO_COLOR` unset.
fn fancy() -> bool {
    std::io::stdout().is_terminal() && std::env::var_os("NO_COLOR").is_none_or(|v| v.is_empty())
}

pub async fn launch(client: &Client, args: LaunchArgs) -> anyhow::Result<()> {
    let started = Instant::now();
    let meta = std::fs::metadata(&args.file).with_context(|| format!("cannot read {}", args.file.display()))?;
    if meta.len() > manifest::MAX_FILE_BYTES {
        bail!("{} has {} bytes, more than the {} allowed", args.file.display(), meta.len(), manifest::MAX_FILE_BYTES);
    }
    let compose =
        std::fs::read_to_string(&args.file).with_context(|| format!("cannot read {} as text", args.file.display()))?;
    let name = match args.name {
        Some(name) => name,
        None => default_name(&args.file)?,
    };
    let playroom_id = match &args.playroom {
        Some(room) => Some(lookup::resolve(client, Kind::Playroom, room).await?),
        None => None,
    };
    let body = json!({
        "name": name,
        "compose_yaml": compose,
        "playroom_id": playroom_id,
        "create_playground": playroom_id.is_some(),
        "persist_volumes": args.persist_volumes,
    });
    let answer = client.call(Method::POST, "/api/launch", Some(&body)).await?;
    let playground = answer.get("playground_id").and_then(Value::as_i64);
    match args.output {
        ReportFormat::Json => println!("{}", output::json(&answer)?),
        ReportFormat::Text => {
            println!("playspec/{name} created (id {})", cell(&answer["playspecs_created"]));
            if let Some(zones) = answer.get("playzones_created").and_then(Value::as_array).filter(|z| !z.is_empty()) {
                println!("playzones created: {}", cell(&Value::Array(zones.clone())));
            }
            if let Some(id) = playground {
                println!("playground/{name} created (id {id})");
            }
        }
    }
    if let (true, Some(id)) = (args.wait, playground) {
        progress(client, id, &format!("playground/{name}"), started + args.timeout.0, args.timeout).await?;
        let detail = client.get(&Kind::Playground.path(id)).await?;
        if let Some(urls) = detail.get("urls").and_then(Value::as_object).filter(|u| !u.is_empty())
            && args.output == ReportFormat::Text
        {
            for (service, url) in urls {
                println!("  {service}: {}", cell(url));
            }
        }
    }
    Ok(())
}

/// Shows the Playground's creation steps until it runs: a spinner on a
/// terminal, else one line per step.
async fn progress(
    client: &Client,
    id: i64,
    label: &str,
    deadline: Instant,
    timeout: HumanDuration,
) -> anyhow::Result<()> {
    let spinner = fancy().then(|| {
        let bar = indicatif::ProgressBar::new_spinner();
        bar.enable_steady_tick(std::time::Duration::from_millis(120));
        bar
    });
    let mut last_step = String::new();
    let result = loop {
        let view = client.get(&format!("/api/playgrounds/{id}/status")).await?;
        let verdict = wait::judge(&view, None);
        let word = view.get("status").and_then(Value::as_str).unwrap_or("-");
        let step = view.get("creation_step_label").and_then(Value::as_str).unwrap_or(word).to_owned();
        if step != last_step {
            match &spinner {
                Some(bar) => bar.set_message(format!("{label}: {step}")),
                None => println!("{label}: {step}"),
            }
            last_step = step;
        }
        match verdict {
            wait::Verdict::Reached(status) => break Ok(status),
            wait::Verdict::Failed(why) => break Err(anyhow::anyhow!("{label} failed at {why}")),
            wait::Verdict::Pending(_) if Instant::now() >= deadline => {
                let message = format!("timed out after {timeout} waiting for {label} to run (step {last_step})");
                break Err(super::exit::Timeout(message).into());
            }
            wait::Verdict::Pending(_) => tokio::time::sleep(wait::POLL).await,
        }
    };
    if let Some(bar) = spinner {
        bar.finish_and_clear();
    }
    let now = result?;
    println!("{label} {now}");
    Ok(())
}

pub async fn extend(client: &Client, args: ExtendArgs) -> anyhow::Result<()> {
    let id = lookup::resolve(client, Kind::Playground, &args.playground).await?;
    let body = args.hours.map(|h| json!({"duration_hours": h}));
    let answer = client.call(Method::POST, &format!("/api/playgrounds/{id}/extend_expiration"), body.as_ref()).await?;
    match args.output {
        ReportFormat::Json => println!("{}", output::json(&answer)?),
        ReportFormat::Text => {
            let expires = answer.get("expires_at").unwrap_or(&Value::Null);
            println!(
                "playground/{} expires at {} ({})",
                args.playground,
                cell(expires),
                output::until(expires, chrono::Utc::now())
            );
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_come_from_directory_names() {
        assert_eq!(name_from("My App_2").as_deref(), Some("my-app-2"));
        assert_eq!(name_from("--x--").as_deref(), Some("x"));
        assert_eq!(name_from("___"), None);
        assert_eq!(name_from(&"a".repeat(80)).map(|n| n.len()), Some(63));
    }
}
