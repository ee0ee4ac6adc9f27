//! Manifests: the YAML documents `apply`, `diff` and `delete -f` read.
//!
//! Reading goes in three passes over the whole set, and sends nothing
//! unless all of them pass: [`read`] (files and documents), the schema
//! ([`schema`], plus duplicate kind+name), then [`resolve`]
//! (`composeFile`, mounted `file`s, `valueFrom`). Every problem names the
//! file, the document (1-based, counting non-empty documents) and the
//! field, with its line where it can be found.
//!
//! Which files: a path given with `-f` is read whatever its name; a
//! directory contributes its `*.yaml` / `*.yml` files (its subdirectories
//! too with `-R`, hidden ones skipped), in name order. A document is a
//! manifest when it has an `apiVersion` key; a file found in a directory
//! none of whose documents has one (a Compose file, say) is skipped, while
//! one named with `-f` is an error.

pub mod lines;
pub mod resolve;
mod schema;

use std::collections::BTreeMap;
use std::fmt;
use std::path::{Path, PathBuf};

use anyhow::Context as _;
use serde_json::Value;

pub use lines::FieldPath;

use schema::Schema;

/// Bound on one manifest file, like on each file it references.
pub const MAX_FILE_BYTES: u64 = 1024 * 1024;

/// Where a document came from.
#[derive(Debug, Clone)]
pub struct Source {
    pub file: PathBuf,
    /// 1-based, among the file's non-empty documents.
    pub index: usize,
    /// The document's text.
    pub text: String,
    /// The 1-based line of the file the document's text starts on.
    pub first_line: usize,
}

impl Source {
    /// `file: document N: path (line L)`, for a message about `path`.
    pub fn at(&self, path: &FieldPath) -> String {
        let mut out = format!("{}: document {}", self.file.display(), self.index);
        if !path.0.is_empty() {
            out.push_str(&format!(": {path}"));
        }
        if let Some(line) = self.line_of(path) {
            out.push_str(&format!(" (line {line})"));
        }
        out
    }

    /// The file's 1-based line of `path`, best effort.
    pub fn line_of(&self, path: &FieldPath) -> Option<usize> {
        lines::locate(&self.text, path).map(|l| l + self.first_line - 1)
    }

    /// The directory relative paths of the document are read from.
    pub fn dir(&self) -> &Path {
        self.file.parent().unwrap_or(Path::new("."))
    }
}

/// One manifest document.
#[derive(Debug, Clone)]
pub struct Document {
    pub source: Source,
    pub value: Value,
}

impl Document {
    pub fn kind(&self) -> &str {
        self.value.get("kind").and_then(Value::as_str).unwrap_or("")
    }

    pub fn name(&self) -> &str {
        self.value.pointer("/metadata/name").and_then(Value::as_str).unwrap_or("")
    }
}

/// Everything wrong with a set of manifests, one line each.
#[derive(Debug, Default)]
pub struct Problems(pub Vec<String>);

impl Problems {
    pub fn push(&mut self, at: String, message: impl fmt::Display) {
        self.0.push(format!("{at}: {message}"));
    }

    pub fn into_result(self) -> anyhow::Result<()> {
        if self.0.is_empty() { Ok(()) } else { Err(self.into()) }
    }
}

impl fmt::Display for Problems {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let n = self.0.len();
        write!(f, "{n} problem{} in the manifests:", if n == 1 { "" } else { "s" })?;
        for p in &self.0 {
            write!(f, "\n  {p}")?;
        }
        Ok(())
    }
}

impl std::error::Error for Problems {}

/// A file to read, and whether it was named on the command line.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Input {
    pub path: PathBuf,
    pub explicit: bool,
}

fn is_yaml(path: &Path) -> bool {
    matches!(path.extension().and_then(|e| e.to_str()), Some("yaml" | "yml"))
}

/// The files `-f` paths stand for (see the module documentation).
pub fn inputs(paths: &[PathBuf], recursive: bool) -> anyhow::Result<Vec<Input>> {
    let mut out = Vec::new();
    for path in paths {
        let meta = std::fs::metadata(path).with_context(|| format!("cannot read {}", path.display()))?;
        if meta.is_dir() {
            walk(path, recursive, &mut out)?;
        } else {
            out.push(Input { path: path.clone(), explicit: true });
        }
    }
    Ok(out)
}

fn walk(dir: &Path, recursive: bool, out: &mut Vec<Input>) -> anyhow::Result<()> {
    let mut entries: Vec<PathBuf> = std::fs::read_dir(dir)
        .with_context(|| format!("cannot list {}", dir.display()))?
        .map(|e| e.map(|e| e.path()))
        .collect::<Result<_, _>>()
        .with_context(|| format!("cannot list {}", dir.display()))?;
    entries.sort();
    for path in entries {
        let hidden = path.file_name().and_then(|n| n.to_str()).is_some_and(|n| n.starts_with('.'));
        if path.is_dir() {
            if recursive && !hidden {
                walk(&path, recursive, out)?;
            }
        } else if is_yaml(&path) && !hidden {
            out.push(Input { path, explicit: false });
        }
    }
    Ok(())
}

/// A file's documents: `(text, first line)` of each non-empty one,
/// split on `---` lines.
pub fn split_documents(text: &str) -> Vec<(String, usize)> {
    let mut docs = Vec::new();
    let mut current = String::new();
    let mut start = 1;
    for (n, line) in text.lines().enumerate() {
        let trimmed = line.trim_end();
        if trimmed == "---" || trimmed.starts_with("--- ") {
            docs.push((std::mem::take(&mut current), start));
            start = n + 2;
            continue;
        }
        current.push_str(line);
        current.push('\n');
    }
    docs.push((current, start));
    docs.retain(|(text, _)| text.lines().any(|l| !l.trim().is_empty() && !l.trim_start().starts_with('#')));
    docs
}

/// Reads the documents of `inputs` (pass one). Files without a manifest
/// document are skipped or refused as the module documentation says.
pub fn read(inputs: &[Input], problems: &mut Problems) -> Vec<Document> {
    let mut out = Vec::new();
    for input in inputs {
        let file = &input.path;
        let text = match read_bounded(file) {
            Ok(text) => text,
            Err(e) => {
                problems.push(file.display().to_string(), format!("{e:#}"));
                continue;
            }
        };
        let mut docs = Vec::new();
        let mut file_problems = Problems::default();
        for (index, (doc_text, first_line)) in split_documents(&text).into_iter().enumerate() {
            let source = Source { file: file.clone(), index: index + 1, text: doc_text, first_line };
            match serde_yaml::from_str::<Value>(&source.text) {
                Ok(Value::Null) => {}
                Ok(value) => docs.push(Document { source, value }),
                Err(e) => {
                    let line = e.location().map(|l| l.line() + first_line - 1);
                    let at = match line {
                        Some(line) => format!("{}: document {} (line {line})", file.display(), source.index),
                        None => format!("{}: document {}", file.display(), source.index),
                    };
                    file_problems.push(at, format!("not valid YAML: {e}"));
                }
            }
        }
        let manifest = docs.iter().any(|d| d.value.get("apiVersion").is_some()) || text.contains("apiVersion");
        if !manifest {
            if input.explicit {
                problems.push(file.display().to_string(), "not a manifest: no document has an apiVersion");
            }
            continue;
        }
        problems.0.extend(file_problems.0);
        out.extend(docs);
    }
    out
}

fn read_bounded(path: &Path) -> anyhow::Result<String> {
    let meta = std::fs::metadata(path).with_context(|| format!("cannot read {}", path.display()))?;
    if meta.len() > MAX_FILE_BYTES {
        anyhow::bail!("{} bytes, more than the {} allowed", meta.len(), MAX_FILE_BYTES);
    }
    let bytes = std::fs::read(path).context("cannot read it")?;
    String::from_utf8(bytes).context("not UTF-8 text")
}

/// Pass two: each document against the schema, and no kind+name twice.
pub fn check(docs: &[Document], schema: &Schema, problems: &mut Problems) {
    let mut seen: BTreeMap<(String, String), &Source> = BTreeMap::new();
    for doc in docs {
        let before = problems.0.len();
        for (path, message) in schema.check(&doc.value) {
            problems.push(doc.source.at(&path), message);
        }
        if problems.0.len() > before {
            continue;
        }
        let key = (doc.kind().to_owned(), doc.name().to_owned());
        if let Some(first) = seen.get(&key) {
            let path = FieldPath::parse_dotted("metadata.name");
            problems.push(
                doc.source.at(&path),
                format!(
                    "duplicate {} {:?}: already in {} document {}",
                    key.0,
                    key.1,
                    first.file.display(),
                    first.index
                ),
            );
        } else {
            seen.insert(key, &doc.source);
        }
    }
}

/// Reads, checks and resolves the manifests under `paths`: the objects to
/// send, with their sources, or every problem found.
pub fn load(
    paths: &[PathBuf],
    recursive: bool,
    env: &dyn Fn(&str) -> Option<String>,
) -> anyhow::Result<Vec<(Document, Value)>> {
    let docs = load_checked(paths, recursive)?;
    let mut problems = Problems::default();
    let mut out = Vec::new();
    for doc in docs {
        if let Some(object) = resolve::resolve(&doc, env, &mut problems) {
            out.push((doc, object));
        }
    }
    problems.into_result()?;
    Ok(out)
}

/// Passes one and two only: enough for `delete -f`, which needs kinds and
/// names, not contents.
pub fn load_checked(paths: &[PathBuf], recursive: bool) -> anyhow::Result<Vec<Document>> {
    let inputs = inputs(paths, recursive)?;
    let mut problems = Problems::default();
    let docs = read(&inputs, &mut problems);
    let schema = Schema::load()?;
    check(&docs, &schema, &mut problems);
    problems.into_result()?;
    if docs.is_empty() {
        anyhow::bail!(
            "no manifests found in {}",
            paths.iter().map(|p| p.display().to_string()).collect::<Vec<_>>().join(", ")
        );
    }
    Ok(docs)
}

#[cfg(test)]
mod tests;
