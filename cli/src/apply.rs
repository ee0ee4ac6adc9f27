//! `apply` and `diff`: manifests to `POST /api/apply`.
//!
//! The body is `{apply_set, prune, objects}` with every object resolved
//! (see [`super::manifest`]); the answer is one result per object. A 4xx
//! whose `details` are keyed `objects[i].<field>` is printed against the
//! manifest the object came from (file, document, field, line).

use std::collections::BTreeMap;
use std::time::Instant;

use anyhow::Context as _;
use reqwest::Method;
use serde::Deserialize;
use serde_json::{Value, json};

use super::args::{ApplyArgs, DiffArgs, ManifestArgs};
use super::client::{ApiError, Client};
use super::exit::Differences;
use super::kinds::Kind;
use super::manifest::{self, Document, FieldPath};
use super::output::{self, ReportFormat};
use super::{apply_set, diff_lines, wait};

/// The server's default request body limit: a bigger request is sent (the
/// server may allow more) with a warning.
const DEFAULT_BODY_LIMIT: usize = 1024 * 1024;

#[derive(Debug, Deserialize)]
pub struct Answer {
    pub dry_run: bool,
    #[serde(default)]
    pub results: Vec<ApplyResult>,
}

#[derive(Debug, Deserialize)]
pub struct ApplyResult {
    pub kind: String,
    pub name: String,
    pub id: Option<i64>,
    pub action: String,
    #[serde(default)]
    pub diff: Vec<Change>,
    #[serde(default)]
    pub drift: Vec<String>,
    #[serde(default)]
    pub revision: Option<String>,
}

#[derive(Debug, Deserialize)]
pub struct Change {
    pub path: String,
    #[serde(default)]
    pub old: Option<Value>,
    #[serde(default)]
    pub new: Option<Value>,
}

/// What apply did to an object, as `results[].action` says.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Action {
    Created,
    Configured,
    Unchanged,
    Pruned,
    /// A word of a newer server: shown as it is, counted as a change.
    Other,
}

impl Action {
    const WORDS: &[(&str, Action)] = &[
        ("created", Action::Created),
        ("configured", Action::Configured),
        ("unchanged", Action::Unchanged),
        ("pruned", Action::Pruned),
    ];

    fn of(word: &str) -> Action {
        Self::WORDS.iter().find(|(w, _)| *w == word).map_or(Action::Other, |(_, a)| *a)
    }
}

impl ApplyResult {
    pub fn action(&self) -> Action {
        Action::of(&self.action)
    }

    /// Whether `diff` counts it as a difference.
    pub fn differs(&self) -> bool {
        self.action() != Action::Unchanged || !self.drift.is_empty()
    }

    /// A Playground `--wait` waits for: applied, not pruned.
    fn awaited(&self) -> Option<i64> {
        let playground = Kind::from_manifest(&self.kind) == Some(Kind::Playground);
        if playground && self.action() != Action::Pruned { self.id } else { None }
    }

    fn label(&self) -> String {
        let kind = Kind::from_manifest(&self.kind).map_or_else(|| self.kind.to_ascii_lowercase(), |k| k.to_string());
        format!("{kind}/{}", self.name)
    }
}

/// Reads the manifests, posts them and returns the raw answer and its
/// reading.
async fn send(
    client: &Client,
    manifests: &ManifestArgs,
    apply_set: Option<String>,
    prune: bool,
    dry_run: bool,
) -> anyhow::Result<(Value, Answer)> {
    let env = |name: &str| std::env::var(name).ok();
    let mut loaded = manifest::load(&manifests.files, manifests.recursive, &env)?;
    let selector = manifests.selector.as_deref().map(apply_set::parse_selector).transpose()?;
    if let Some(pairs) = &selector {
        loaded.retain(|(doc, _)| apply_set::selects(pairs, &doc.value));
    }
    let set = match apply_set {
        Some(set) => {
            apply_set::check(&set)?;
            set
        }
        None => {
            let derived = apply_set::derive(&manifests.files)?;
            match &selector {
                Some(pairs) => apply_set::with_selector(&derived, pairs)?,
                None => derived,
            }
        }
    };
    let objects: Vec<&Value> = loaded.iter().map(|(_, object)| object).collect();
    let body = json!({"apply_set": set, "prune": prune, "objects": objects});
    let size = serde_json::to_vec(&body).map(|b| b.len()).unwrap_or(0);
    if size > DEFAULT_BODY_LIMIT {
        eprintln!(
            "warning: the request is {size} bytes, more than the server's default limit of {DEFAULT_BODY_LIMIT} \
             (PLAY_MAX_BODY_BYTES); a server with the default refuses it with 413"
        );
    }
    let path = if dry_run { "/api/apply?dry_run=true" } else { "/api/apply" };
    let raw = match client.call(Method::POST, path, Some(&body)).await {
        Ok(raw) => raw,
        Err(e) => return Err(locate_details(e, &loaded)),
    };
    let answer: Answer = serde_json::from_value(raw.clone()).context("unexpected answer from POST /api/apply")?;
    Ok((raw, answer))
}

/// Rewrites the `objects[i].field` keys of an API error's details as
/// `file: document N: field (line L)`.
fn locate_details(err: anyhow::Error, loaded: &[(Document, Value)]) -> anyhow::Error {
    let Some(api) = err.downcast_ref::<ApiError>() else { return err };
    let mut details: BTreeMap<String, Vec<String>> = BTreeMap::new();
    for (key, messages) in &api.details {
        let located = object_index(key).and_then(|(i, rest)| {
            let (doc, _) = loaded.get(i)?;
            Some(doc.source.at(&FieldPath::parse_dotted(rest)))
        });
        details.entry(located.unwrap_or_else(|| key.clone())).or_default().extend(messages.iter().cloned());
    }
    ApiError { details, ..api.clone() }.into()
}

/// `objects[3].spec.x` -> `(3, "spec.x")`.
fn object_index(key: &str) -> Option<(usize, &str)> {
    let rest = key.strip_prefix("objects[")?;
    let (index, rest) = rest.split_once(']')?;
    Some((index.parse().ok()?, rest.strip_prefix('.').unwrap_or(rest)))
}

/// The text report: one line per result, its changes indented.
pub fn render(answer: &Answer) -> String {
    let mut out = Vec::new();
    let mut counts: BTreeMap<&str, usize> = BTreeMap::new();
    for result in &answer.results {
        *counts.entry(result.action.as_str()).or_default() += 1;
        let mut line = format!("{} {}", result.label(), result.action);
        if let Some(revision) = &result.revision {
            line.push_str(&format!(" (revision {revision})"));
        }
        out.push(line);
        for change in &result.diff {
            render_change(change, &mut out);
        }
        for drift in &result.drift {
            out.push(format!("  ! drift: {drift}"));
        }
    }
    let summary: Vec<String> = counts.iter().map(|(action, n)| format!("{n} {action}")).collect();
    let mut last = if summary.is_empty() { "nothing to apply".to_owned() } else { summary.join(", ") };
    if answer.dry_run {
        last.push_str(" (dry run)");
    }
    out.push(last);
    out.join("\n")
}

fn render_change(change: &Change, out: &mut Vec<String>) {
    let (old, new) = (change.old.as_ref().filter(|v| !v.is_null()), change.new.as_ref().filter(|v| !v.is_null()));
    let sign = match (old, new) {
        (None, Some(_)) => '+',
        (Some(_), None) => '-',
        _ => '~',
    };
    let texts = (old.and_then(Value::as_str), new.and_then(Value::as_str));
    let multiline = [texts.0, texts.1].iter().flatten().any(|t| t.contains('\n'));
    if multiline {
        out.push(format!("  {sign} {}:", change.path));
        for line in diff_lines::diff(texts.0.unwrap_or(""), texts.1.unwrap_or("")) {
            out.push(format!("      {line}"));
        }
        return;
    }
    let line = match sign {
        '+' => format!("  + {}: {}", change.path, output::diff_value(new)),
        '-' => format!("  - {}: {}", change.path, output::diff_value(old)),
        _ => format!("  ~ {}: {} -> {}", change.path, output::diff_value(old), output::diff_value(new)),
    };
    out.push(line);
}

fn print(raw: &Value, answer: &Answer, format: ReportFormat) -> anyhow::Result<()> {
    match format {
        ReportFormat::Json => println!("{}", output::json(raw)?),
        ReportFormat::Text => println!("{}", render(answer)),
    }
    Ok(())
}

pub async fn apply(client: &Client, args: ApplyArgs) -> anyhow::Result<()> {
    let started = Instant::now();
    let (raw, answer) = send(client, &args.manifests, args.apply_set, args.prune, args.dry_run).await?;
    print(&raw, &answer, args.output)?;
    if args.wait && !answer.dry_run {
        let deadline = started + args.timeout.0;
        for result in &answer.results {
            if let Some(id) = result.awaited() {
                wait::playground_ready(client, id, &result.label(), deadline, args.timeout).await?;
            }
        }
    }
    Ok(())
}

pub async fn diff(client: &Client, args: DiffArgs) -> anyhow::Result<()> {
    let (raw, answer) = send(client, &args.manifests, args.apply_set, args.prune, true).await?;
    print(&raw, &answer, args.output)?;
    if answer.results.iter().any(ApplyResult::differs) { Err(Differences.into()) } else { Ok(()) }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn answer(value: Value) -> Answer {
        serde_json::from_value(value).unwrap()
    }

    #[test]
    fn results_print_one_line_each_with_their_changes() {
        let a = answer(json!({"dry_run": false, "apply_set": "git:x", "results": [
            {"kind": "Playspec", "name": "web", "id": 3, "action": "configured", "revision": "web-3f2a9c1b",
             "diff": [{"path": "spec.persist_volumes", "old": false, "new": true},
                      {"path": "spec.description", "old": null, "new": "hi"},
                      {"path": "spec.base_compose_yaml", "old": "services:\n  web:\n    image: a\n", "new": "services:\n  web:\n    image: b\n"}],
             "drift": []},
            {"kind": "Playground", "name": "demo", "id": 9, "action": "unchanged", "diff": [], "drift": ["service web is stopped"]},
            {"kind": "ImportTemplate", "name": "old", "id": null, "action": "pruned", "diff": [], "drift": []},
        ]}));
        assert_eq!(
            render(&a),
            "playspec/web configured (revision web-3f2a9c1b)\n\
             \x20 ~ spec.persist_volumes: false -> true\n\
             \x20 + spec.description: \"hi\"\n\
             \x20 ~ spec.base_compose_yaml:\n\
             \x20     -     image: a\n\
             \x20     +     image: b\n\
             playground/demo unchanged\n\
             \x20 ! drift: service web is stopped\n\
             template/old pruned\n\
             1 configured, 1 pruned, 1 unchanged"
        );
        assert!(a.results[0].differs() && a.results[1].differs() && a.results[2].differs());
        assert_eq!(
            a.results.iter().map(ApplyResult::action).collect::<Vec<_>>(),
            [Action::Configured, Action::Unchanged, Action::Pruned]
        );
        // Only applied Playgrounds are waited for.
        assert_eq!(a.results.iter().map(ApplyResult::awaited).collect::<Vec<_>>(), [None, Some(9), None]);
    }

    #[test]
    fn unchanged_without_drift_is_no_difference_and_dry_runs_say_so() {
        let a = answer(json!({"dry_run": true, "results": [
            {"kind": "Playzone", "name": "app", "id": 1, "action": "unchanged"}]}));
        assert!(!a.results[0].differs());
        assert_eq!(render(&a), "playzone/app unchanged\n1 unchanged (dry run)");
    }

    #[test]
    fn validation_details_point_back_into_the_manifests() {
        let dir = tempfile::tempdir().unwrap();
        let file = dir.path().join("m.yaml");
        let text = "apiVersion: play/v1\nkind: Playspec\nmetadata:\n  name: web\nspec:\n  composeFile: c.yaml\n";
        std::fs::write(&file, text).unwrap();
        std::fs::write(dir.path().join("c.yaml"), "services: {}\n").unwrap();
        let loaded = manifest::load(std::slice::from_ref(&file), false, &|_| None).unwrap();
        let mut details = BTreeMap::new();
        details.insert("objects[0].spec.base_compose_yaml.services".to_owned(), vec!["needs a service".to_owned()]);
        details.insert("apply_set".to_owned(), vec!["bad".to_owned()]);
        let err = ApiError { status: 422, code: "VALIDATION_FAILED".into(), message: "invalid".into(), details };
        let located = locate_details(err.into(), &loaded);
        let text = located.to_string();
        let at = format!("{}: document 1: spec.base_compose_yaml.services (line 6): needs a service", file.display());
        assert!(text.contains(&at), "{text}");
        assert!(text.contains("\n  apply_set: bad"), "{text}");
        assert_eq!(super::super::exit::code(&located), super::super::exit::API_REFUSED);
    }

    #[test]
    fn object_keys_split_into_index_and_field() {
        assert_eq!(object_index("objects[3].spec.x"), Some((3, "spec.x")));
        assert_eq!(object_index("objects[0]"), Some((0, "")));
        assert_eq!(object_index("prune"), None);
    }
}
