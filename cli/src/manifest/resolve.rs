//! Pass three: what the CLI fills in before sending, relative to the
//! manifest file's directory.
//!
//! - `spec.composeFile: PATH` becomes the kind's Compose field
//!   ([`COMPOSE_FIELDS`]); giving both is an error.
//! - `spec.mounted_files[*].file: PATH` becomes `content` (UTF-8 text) or
//!   `content_base64` (anything else).
//! - Anywhere in `spec`, a mapping that is exactly `{valueFrom: {env: NAME}}`
//!   becomes that variable's value (it must be set), and exactly
//!   `{valueFrom: {file: PATH}}` the file's UTF-8 text with one trailing
//!   line break (`\n` or `\r\n`) removed, so a secret written by `echo` or
//!   an editor has no newline added.
//! - `spec.ttl` must be a duration (`8h`, `1h 30m`).
//! - A Repository's `spec.filesFrom: FOLDER` becomes `files`: every file
//!   under the folder (`.git` and symlinks left out) as `{path, content}`,
//!   within a push's bounds (`crate::repo::read_folder`); giving both is
//!   an error.
//!
//! Every file read is at most [`MAX_FILE_BYTES`]. Paths are relative to
//! the manifest's directory (absolute ones are taken as they are).

use std::path::Path;

use base64::Engine as _;
use serde_json::{Map, Value};

use super::{Document, FieldPath, MAX_FILE_BYTES, Problems};

/// `composeFile` -> the field it fills, per kind: the one table.
pub const COMPOSE_FIELDS: &[(&str, &str)] = &[("Playspec", "base_compose_yaml"), ("ImportTemplate", "template_body")];

/// Reads a referenced file, bounded.
fn read_file(dir: &Path, relative: &str) -> Result<Vec<u8>, String> {
    let path = dir.join(relative);
    let meta = std::fs::metadata(&path).map_err(|e| format!("cannot read {}: {e}", path.display()))?;
    if !meta.is_file() {
        return Err(format!("{} is not a file", path.display()));
    }
    if meta.len() > MAX_FILE_BYTES {
        return Err(format!("{} has {} bytes, more than the {MAX_FILE_BYTES} allowed", path.display(), meta.len()));
    }
    std::fs::read(&path).map_err(|e| format!("cannot read {}: {e}", path.display()))
}

fn read_text(dir: &Path, relative: &str) -> Result<String, String> {
    let bytes = read_file(dir, relative)?;
    String::from_utf8(bytes).map_err(|_| format!("{} is not UTF-8 text", dir.join(relative).display()))
}

/// The object to send for `doc`, or `None` with its problems recorded.
pub fn resolve(doc: &Document, env: &dyn Fn(&str) -> Option<String>, problems: &mut Problems) -> Option<Value> {
    let before = problems.0.len();
    let mut object = doc.value.clone();
    let kind = doc.kind().to_owned();
    let dir = doc.source.dir().to_owned();
    let spec_path = FieldPath::parse_dotted("spec");
    let mut report = |path: &FieldPath, message: String| problems.push(doc.source.at(path), message);
    let Some(spec) = object.get_mut("spec").and_then(Value::as_object_mut) else {
        report(&spec_path, "must be a mapping".to_owned());
        return None;
    };
    if let Some(&(_, field)) = COMPOSE_FIELDS.iter().find(|(k, _)| *k == kind) {
        compose_file(spec, field, &dir, &spec_path, &mut report);
    }
    if kind == "Repository" {
        files_from(spec, &dir, &spec_path, &mut report);
    }
    if let Some(Value::Array(files)) = spec.get_mut("mounted_files") {
        for (i, file) in files.iter_mut().enumerate() {
            if let Some(file) = file.as_object_mut() {
                mounted_file(file, &dir, &spec_path.child("mounted_files").index(i), &mut report);
            }
        }
    }
    if let Some(Value::String(ttl)) = spec.get("ttl")
        && let Err(e) = humantime::parse_duration(ttl)
    {
        report(&spec_path.child("ttl"), format!("{ttl:?} is not a duration such as 8h or 1h 30m: {e}"));
    }
    for (key, value) in spec.iter_mut() {
        value_from(value, &spec_path.child(key), &dir, env, &mut report);
    }
    (problems.0.len() == before).then_some(object)
}

fn compose_file(
    spec: &mut Map<String, Value>,
    field: &str,
    dir: &Path,
    spec_path: &FieldPath,
    report: &mut impl FnMut(&FieldPath, String),
) {
    let Some(path) = spec.remove("composeFile") else { return };
    let at = spec_path.child("composeFile");
    let Some(relative) = path.as_str() else { return report(&at, "must be a path".into()) };
    if spec.contains_key(field) {
        return report(&at, format!("give either composeFile or {field}, not both"));
    }
    match read_text(dir, relative) {
        Ok(text) => {
            spec.insert(field.to_owned(), Value::String(text));
        }
        Err(e) => report(&at, e),
    }
}

fn files_from(
    spec: &mut Map<String, Value>,
    dir: &Path,
    spec_path: &FieldPath,
    report: &mut impl FnMut(&FieldPath, String),
) {
    let Some(path) = spec.remove("filesFrom") else { return };
    let at = spec_path.child("filesFrom");
    let Some(relative) = path.as_str() else { return report(&at, "must be a path".into()) };
    if spec.contains_key("files") {
        return report(&at, "give either filesFrom or files, not both".into());
    }
    let folder = dir.join(relative);
    if !folder.is_dir() {
        return report(&at, format!("{} is not a folder", folder.display()));
    }
    match crate::repo::read_folder(&folder) {
        Ok(files) if files.is_empty() => report(&at, format!("{} holds no file", folder.display())),
        Ok(files) => {
            spec.insert("files".into(), Value::Array(files));
        }
        Err(e) => report(&at, format!("{e:#}")),
    }
}

fn mounted_file(
    file: &mut Map<String, Value>,
    dir: &Path,
    at: &FieldPath,
    report: &mut impl FnMut(&FieldPath, String),
) {
    let Some(path) = file.remove("file") else { return };
    let at = at.child("file");
    let Some(relative) = path.as_str() else { return report(&at, "must be a path".into()) };
    if file.contains_key("content") || file.contains_key("content_base64") {
        return report(&at, "give one of file, content and content_base64".into());
    }
    match read_file(dir, relative) {
        Ok(bytes) => match String::from_utf8(bytes) {
            Ok(text) => {
                file.insert("content".into(), Value::String(text));
            }
            Err(e) => {
                let encoded = base64::engine::general_purpose::STANDARD.encode(e.into_bytes());
                file.insert("content_base64".into(), Value::String(encoded));
            }
        },
        Err(e) => report(&at, e),
    }
}

/// The reference in `value` if it is exactly `{valueFrom: {KIND: ARG}}`.
fn reference(value: &Value) -> Option<(&str, &str)> {
    let outer = value.as_object().filter(|o| o.len() == 1)?;
    let inner = outer.get("valueFrom")?.as_object().filter(|i| i.len() == 1)?;
    let (kind, arg) = inner.iter().next()?;
    Some((kind.as_str(), arg.as_str()?))
}

fn value_from(
    value: &mut Value,
    at: &FieldPath,
    dir: &Path,
    env: &dyn Fn(&str) -> Option<String>,
    report: &mut impl FnMut(&FieldPath, String),
) {
    if let Some((kind, arg)) = reference(value) {
        let resolved = match kind {
            "env" => env(arg).ok_or_else(|| format!("valueFrom: the environment variable {arg} is not set")),
            "file" => read_text(dir, arg).map(|text| {
                let text = text.strip_suffix('\n').map_or(text.as_str(), |t| t.strip_suffix('\r').unwrap_or(t));
                text.to_owned()
            }),
            other => Err(format!("valueFrom: unknown source {other:?} (env or file)")),
        };
        match resolved {
            Ok(text) => *value = Value::String(text),
            Err(e) => report(at, e),
        }
        return;
    }
    match value {
        Value::Object(map) => {
            for (key, child) in map.iter_mut() {
                value_from(child, &at.child(key), dir, env, report);
            }
        }
        Value::Array(items) => {
            for (i, child) in items.iter_mut().enumerate() {
                value_from(child, &at.index(i), dir, env, report);
            }
        }
        _ => {}
    }
}
