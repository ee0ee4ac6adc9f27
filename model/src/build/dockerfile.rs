//! What play reads in a tenant's Dockerfile before it sends the build to
//! a Playroom's engine: the images it names and the remote sources it
//! fetches. The engine builds on the Playroom's host, with that host's
//! network and image store, so a Dockerfile is tenant input like a Compose
//! file (issue #27, items 5 and 7):
//!
//! - every image a build can start from or copy out of (`FROM`,
//!   `COPY --from=<image>`, `RUN --mount=...,from=<image>`) is returned as
//!   an [`ImageRef`], build arguments resolved, so the caller checks its
//!   registry's address and refuses play's own `play-build` images (one
//!   account must never start from an image another account's code was
//!   built into);
//! - `ADD <url>` (and `ADD <git ref>`) is refused on an untrusted Playroom:
//!   it makes the engine's host fetch any address, the cloud metadata
//!   service included, and bake the answer into an image.
//!
//! The reader follows the Dockerfile's syntax as BuildKit and the classic
//! builder do: the `escape` parser directive, line continuations, comments
//! and empty lines inside a continued instruction, and heredoc bodies
//! (`RUN <<EOF ... EOF`), which are never read as instructions.

use std::collections::BTreeMap;

use crate::compose::image_ref::ImageRef;

/// Longest Dockerfile read, in bytes (larger ones are refused: a real one
/// is a few KiB).
pub const MAX_DOCKERFILE_BYTES: usize = 1024 * 1024;

/// One instruction: its first line (1-based), keyword in upper case, and
/// its arguments with continuations joined.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Instruction {
    pub line: usize,
    pub keyword: String,
    pub args: String,
}

/// The instructions of `text`.
pub fn instructions(text: &str) -> Vec<Instruction> {
    let lines: Vec<&str> = text.lines().collect();
    let escape = escape_char(&lines);
    let mut out = Vec::new();
    let mut i = 0;
    while i < lines.len() {
        let trimmed = lines[i].trim();
        if trimmed.is_empty() || trimmed.starts_with('#') {
            i += 1;
            continue;
        }
        let start = i;
        let mut joined = String::new();
        loop {
            let line = lines[i].trim_end();
            let continued = line.ends_with(escape);
            let part = if continued { &line[..line.len() - escape.len_utf8()] } else { line };
            joined.push_str(part);
            i += 1;
            if !continued {
                break;
            }
            joined.push(' ');
            // Comments and empty lines inside a continuation are dropped.
            while i < lines.len() && (lines[i].trim().is_empty() || lines[i].trim_start().starts_with('#')) {
                i += 1;
            }
            if i >= lines.len() {
                break;
            }
        }
        let joined = joined.trim();
        let (keyword, args) = joined.split_once(char::is_whitespace).unwrap_or((joined, ""));
        let args = args.trim().to_owned();
        for (delimiter, strip_tabs) in heredocs(&args) {
            while i < lines.len() {
                let body = if strip_tabs { lines[i].trim_start_matches('\t') } else { lines[i] };
                i += 1;
                if body == delimiter {
                    break;
                }
            }
        }
        out.push(Instruction { line: start + 1, keyword: keyword.to_ascii_uppercase(), args });
    }
    out
}

/// The escape character: `\` unless a leading `# escape=` directive says
/// `` ` ``.
fn escape_char(lines: &[&str]) -> char {
    for line in lines {
        let Some(directive) = line.trim().strip_prefix('#') else { break };
        let directive = directive.trim();
        if let Some((name, value)) = directive.split_once('=')
            && name.trim().eq_ignore_ascii_case("escape")
        {
            return if value.trim() == "`" { '`' } else { '\\' };
        }
    }
    '\\'
}

/// The heredocs an instruction opens (`<<EOF`, `<<-"EOF"`): delimiter and
/// whether leading tabs are stripped from its body.
fn heredocs(args: &str) -> Vec<(String, bool)> {
    let mut out = Vec::new();
    let mut rest = args;
    while let Some(at) = rest.find("<<") {
        rest = &rest[at + 2..];
        let strip_tabs = rest.starts_with('-');
        let word = rest.trim_start_matches('-');
        let word = word.trim_start_matches(['"', '\'']);
        let delimiter: String = word.chars().take_while(|c| c.is_ascii_alphanumeric() || *c == '_').collect();
        if !delimiter.is_empty() {
            out.push((delimiter, strip_tabs));
        }
    }
    out
}

/// An image a build reads, and the line that names it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct NamedImage {
    pub line: usize,
    /// As written, build arguments resolved.
    pub written: String,
    pub image: ImageRef,
}

/// What a Dockerfile uses from outside its build context.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Uses {
    /// Images it starts from or copies out of (never a stage of its own,
    /// never `scratch`).
    pub images: Vec<NamedImage>,
    /// `ADD` instructions with a remote source: line and the source.
    pub remote_adds: Vec<(usize, String)>,
    /// The names of its stages (`FROM ... AS <name>`), as written, in
    /// order: what a build `target` may name.
    pub stages: Vec<String>,
}

/// Reads what `text` uses, with `build_args` (the Compose file's) over the
/// defaults of the `ARG`s before the first `FROM`.
pub fn uses(text: &str, build_args: &BTreeMap<String, String>) -> Uses {
    let mut args: BTreeMap<String, String> = BTreeMap::new();
    let mut stages: Vec<String> = Vec::new();
    let mut seen_from = false;
    let mut out = Uses::default();
    for ins in instructions(text) {
        match ins.keyword.as_str() {
            "ARG" if !seen_from => {
                for decl in ins.args.split_whitespace() {
                    let (name, default) = decl.split_once('=').unwrap_or((decl, ""));
                    let value = build_args.get(name).cloned().unwrap_or_else(|| unquote(default).to_owned());
                    args.insert(name.to_owned(), value);
                }
            }
            "FROM" => {
                seen_from = true;
                let words: Vec<&str> = ins.args.split_whitespace().filter(|w| !w.starts_with("--")).collect();
                if let Some(first) = words.first() {
                    let written = substitute(first, &args);
                    let own_stage = stages.iter().any(|s| s.eq_ignore_ascii_case(&written));
                    if !own_stage && !written.eq_ignore_ascii_case("scratch") {
                        out.images.push(named(ins.line, written));
                    }
                }
                if let [_, as_word, name, ..] = words.as_slice()
                    && as_word.eq_ignore_ascii_case("as")
                {
                    stages.push((*name).to_owned());
                }
            }
            "COPY" | "ADD" | "RUN" => {
                for source in from_flags(&ins.args) {
                    let written = substitute(&source, &args);
                    let stage = stages.iter().any(|s| s.eq_ignore_ascii_case(&written))
                        || written.parse::<usize>().is_ok_and(|n| n < stages.len().max(1));
                    if !stage {
                        out.images.push(named(ins.line, written));
                    }
                }
                if ins.keyword == "ADD" {
                    out.remote_adds.extend(
                        ins.args
                            .split_whitespace()
                            .filter(|w| !w.starts_with("--") && !w.starts_with("<<"))
                            .filter(|w| is_remote(w))
                            .map(|w| (ins.line, w.to_owned())),
                    );
                }
            }
            _ => {}
        }
    }
    out.stages = stages;
    out
}

fn named(line: usize, written: String) -> NamedImage {
    let image = ImageRef::parse(&written);
    NamedImage { line, written, image }
}

/// `--from=X` of `COPY`, and `from=X` inside `RUN --mount=...`.
fn from_flags(args: &str) -> Vec<String> {
    let mut out = Vec::new();
    for word in args.split_whitespace().take_while(|w| w.starts_with("--")) {
        if let Some(value) = word.strip_prefix("--from=") {
            out.push(unquote(value).to_owned());
        } else if let Some(mount) = word.strip_prefix("--mount=") {
            out.extend(mount.split(',').filter_map(|kv| kv.strip_prefix("from=")).map(|v| unquote(v).to_owned()));
        }
    }
    out
}

/// Whether an `ADD` source is fetched from elsewhere: a URL or a git
/// reference.
fn is_remote(source: &str) -> bool {
    let lower = source.trim_matches(['"', '[', ']', ',']).to_ascii_lowercase();
    lower.contains("://") || lower.starts_with("git@")
}

fn unquote(text: &str) -> &str {
    text.trim_matches(['"', '\''])
}

/// `$NAME`, `${NAME}`, `${NAME:-default}` and `${NAME-default}` replaced
/// from `args` (unknown names by their default, else nothing, as the
/// builder does).
fn substitute(text: &str, args: &BTreeMap<String, String>) -> String {
    let mut out = String::new();
    let mut rest = text;
    while let Some(at) = rest.find('$') {
        out.push_str(&rest[..at]);
        rest = &rest[at + 1..];
        if let Some(body) = rest.strip_prefix('{') {
            let Some(end) = body.find('}') else {
                out.push('$');
                continue;
            };
            let inner = &body[..end];
            let (name, default) = match inner.split_once(":-").or_else(|| inner.split_once('-')) {
                Some((name, default)) => (name, Some(default)),
                None => (inner, None),
            };
            match args.get(name).filter(|v| !v.is_empty()) {
                Some(value) => out.push_str(value),
                None => out.push_str(default.unwrap_or("")),
            }
            rest = &body[end + 1..];
        } else {
            let name: String = rest.chars().take_while(|c| c.is_ascii_alphanumeric() || *c == '_').collect();
            if name.is_empty() {
                out.push('$');
                continue;
            }
            out.push_str(args.get(&name).map(String::as_str).unwrap_or(""));
            rest = &rest[name.len()..];
        }
    }
    out.push_str(rest);
    out
}

#[cfg(test)]
mod tests;
