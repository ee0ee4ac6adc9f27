//! Git's smart HTTP for play's own Git host: each request runs Git's own
//! `git http-backend` (a CGI program of the Debian package `git`, a
//! documented dependency of `play serve`) on one repository, with the
//! request body streamed in and the answer streamed out.
//!
//! # Invariants
//!
//! - The caller has authenticated and authorised the request; this module
//!   only speaks the protocol. A push needs `remote_user` (http-backend
//!   refuses `receive-pack` without one).
//! - The program runs with a cleared environment: no system or user
//!   configuration, hooks pointed at a folder that does not exist (a
//!   repository's own hooks never run), every received object checked
//!   (`receive.fsckObjects`, which also refuses trees with a `.git` entry).
//! - The path it serves is made from a checked [`FullName`] only.
//! - For a push, the branches it moved are read from the repository after
//!   the program exits, compared with before, and sent on
//!   [`GitHttpResponse::moved`].

use std::collections::BTreeMap;
use std::path::PathBuf;
use std::process::Stdio;

use git2::Repository;
use play_core::scm::http::{BranchMove, GitHttpRequest, GitHttpResponse, Service};
use play_core::scm::{FullName, ScmError};
use tokio::io::{AsyncBufReadExt, AsyncReadExt, BufReader};
use tokio::process::Command;

/// Most bytes of CGI headers read before the body.
const MAX_HEADER_BYTES: usize = 16 * 1024;

/// Serves one request on `<root>/<owner>/<name>.git`.
pub(crate) async fn serve(
    root: PathBuf,
    full: &FullName,
    request: GitHttpRequest,
) -> Result<GitHttpResponse, ScmError> {
    let repository = root.join(&full.owner).join(format!("{}.git", full.name));
    if !repository.is_dir() {
        return Err(ScmError::NotFound);
    }
    let pushing = request.service == Service::ReceivePack && !request.advertisement;
    let before = if pushing { Some(branches(repository.clone()).await?) } else { None };
    let (method, path, query) = if request.advertisement {
        ("GET", "info/refs".to_owned(), format!("service={}", request.service.as_str()))
    } else {
        ("POST", request.service.as_str().to_owned(), String::new())
    };
    let mut command = Command::new("git");
    command
        .arg("http-backend")
        .env_clear()
        .env("PATH", std::env::var_os("PATH").unwrap_or_default())
        .env("GIT_PROJECT_ROOT", &root)
        .env("GIT_HTTP_EXPORT_ALL", "1")
        .env("GIT_CONFIG_NOSYSTEM", "1")
        .env("GIT_CONFIG_GLOBAL", "/dev/null")
        .env("HOME", "/nonexistent")
        .env("GIT_CONFIG_COUNT", "3")
        .env("GIT_CONFIG_KEY_0", "core.hooksPath")
        .env("GIT_CONFIG_VALUE_0", "/nonexistent/play-no-hooks")
        .env("GIT_CONFIG_KEY_1", "receive.fsckObjects")
        .env("GIT_CONFIG_VALUE_1", "true")
        .env("GIT_CONFIG_KEY_2", "http.receivepack")
        .env("GIT_CONFIG_VALUE_2", if request.remote_user.is_some() { "true" } else { "false" })
        .env("REQUEST_METHOD", method)
        .env("PATH_INFO", format!("/{}/{}.git/{path}", full.owner, full.name))
        .env("QUERY_STRING", query)
        .env("REMOTE_ADDR", "127.0.0.1")
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .kill_on_drop(true);
    if let Some(content_type) = &request.content_type {
        command.env("CONTENT_TYPE", content_type);
    }
    if let Some(encoding) = &request.content_encoding {
        command.env("HTTP_CONTENT_ENCODING", encoding);
    }
    if let Some(user) = &request.remote_user {
        command.env("REMOTE_USER", user);
    }
    let mut child = command.spawn().map_err(|e| ScmError::Failed(format!("starting git http-backend: {e}")))?;
    let (Some(mut stdin), Some(stdout), Some(mut stderr)) =
        (child.stdin.take(), child.stdout.take(), child.stderr.take())
    else {
        return Err(ScmError::Failed("git http-backend without its pipes".into()));
    };
    let mut body = request.body;
    tokio::spawn(async move {
        // The client may stop sending; the program then ends on its own.
        let _ = tokio::io::copy(&mut body, &mut stdin).await;
    });
    let mut stdout = BufReader::new(stdout);
    let (status, headers) = read_headers(&mut stdout).await?;
    let (moved_tx, moved_rx) = tokio::sync::oneshot::channel();
    let label = full.to_string();
    tokio::spawn(async move {
        let mut errors = Vec::new();
        let _ = (&mut stderr).take(4096).read_to_end(&mut errors).await;
        let exit = child.wait().await;
        if !errors.is_empty() {
            tracing::debug!(repository = %label, stderr = %String::from_utf8_lossy(&errors), "git http-backend");
        }
        if let (Some(before), Ok(_)) = (before, exit) {
            let after = branches(repository).await.unwrap_or_default();
            let _ = moved_tx.send(diff(&before, &after));
        }
    });
    Ok(GitHttpResponse { status, headers, body: Box::new(stdout), moved: pushing.then_some(moved_rx) })
}

/// The CGI headers: `Status:` (200 when absent) and the rest.
async fn read_headers(
    stdout: &mut BufReader<tokio::process::ChildStdout>,
) -> Result<(u16, Vec<(String, String)>), ScmError> {
    let (mut status, mut headers, mut read) = (200, Vec::new(), 0);
    loop {
        let mut line = String::new();
        let n = stdout.read_line(&mut line).await.map_err(|e| ScmError::Failed(format!("git http-backend: {e}")))?;
        read += n;
        if n == 0 || read > MAX_HEADER_BYTES {
            return Err(ScmError::Failed("git http-backend ended before its answer".into()));
        }
        let line = line.trim_end_matches(['\r', '\n']);
        if line.is_empty() {
            return Ok((status, headers));
        }
        let Some((name, value)) = line.split_once(':') else { continue };
        let value = value.trim().to_owned();
        if name.eq_ignore_ascii_case("status") {
            status = value.split_whitespace().next().and_then(|s| s.parse().ok()).unwrap_or(500);
        } else {
            headers.push((name.to_owned(), value));
        }
    }
}

/// The branches of the repository at `path`: name -> commit.
async fn branches(path: PathBuf) -> Result<BTreeMap<String, String>, ScmError> {
    tokio::task::spawn_blocking(move || {
        let repo = Repository::open_bare(&path).map_err(|e| ScmError::Failed(e.message().to_owned()))?;
        let mut out = BTreeMap::new();
        let refs = repo.references_glob("refs/heads/*").map_err(|e| ScmError::Failed(e.message().to_owned()))?;
        for reference in refs.flatten() {
            if let (Ok(name), Some(target)) = (reference.name(), reference.target()) {
                out.insert(name.trim_start_matches("refs/heads/").to_owned(), target.to_string());
            }
        }
        Ok(out)
    })
    .await
    .map_err(|e| ScmError::Failed(format!("reading branches: {e}")))?
}

fn diff(before: &BTreeMap<String, String>, after: &BTreeMap<String, String>) -> Vec<BranchMove> {
    let names: std::collections::BTreeSet<&String> = before.keys().chain(after.keys()).collect();
    names
        .into_iter()
        .filter(|name| before.get(*name) != after.get(*name))
        .map(|name| BranchMove { branch: name.clone(), old: before.get(name).cloned(), new: after.get(name).cloned() })
        .collect()
}
