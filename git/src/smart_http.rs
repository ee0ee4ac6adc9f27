//! Git's smart HTTP for play's own Git host: each request runs Git's own
//! `git http-backend` (a CGI program of the Debian package `git`, a
//! documented dependency of `play serve`) on one repository, with the
//! request body streamed in and the answer streamed out.
//!
//! # Invariants
//!
//! - The caller has authenticated and authorised the request; this module
//!   speaks the protocol and holds it to the host's bounds
//!   ([`GitHostLimits`]). A push needs `remote_user` (http-backend refuses
//!   `receive-pack` without one).
//! - The caller holds a process permit for the request; it is released
//!   when the program has exited, and the answer's body ends only then.
//! - The program runs with a cleared environment: no system or user
//!   configuration, hooks pointed at a folder that does not exist (a
//!   repository's own hooks never run), every received object checked
//!   (`receive.fsckObjects`, which also refuses trees with a `.git`
//!   entry), a pack no larger than the request bound or the account's
//!   room left (`receive.maxInputSize`), no push options.
//! - The program never sees a compressed body: play inflates it under the
//!   bound ([`crate::body`]). A push's commands and pack header reach it
//!   only once counted ([`crate::receive`]).
//! - The path it serves is made from a checked [`FullName`] only.
//! - For a push, the branches it moved are the commands' refs that now
//!   hold what the push asked, read after the program exits and sent on
//!   [`GitHttpResponse::moved`].

use std::path::{Path, PathBuf};
use std::process::Stdio;

use futures::StreamExt as _;
use git2::Repository;
use play_model::scm::http::{BranchMove, ByteReader, GitHttpRequest, GitHttpResponse, Service};
use play_model::scm::{FullName, ScmError};
use tokio::io::{AsyncBufReadExt, AsyncReadExt, BufReader};
use tokio::process::{ChildStdout, Command};
use tokio::sync::{OwnedSemaphorePermit, oneshot};
use tokio_util::io::{ReaderStream, StreamReader};

use crate::body::{Body, BodyError, Encoding};
use crate::limits::{CUT_SLACK, GitHostLimits, usage};
use crate::receive::{self, Admission, PushBounds};

/// Most bytes of CGI headers read before the body.
const MAX_HEADER_BYTES: usize = 16 * 1024;

/// Serves one request on `<root>/<owner>/<name>.git`, holding `permit`
/// until the program has exited.
pub(crate) async fn serve(
    root: &Path,
    limits: &GitHostLimits,
    permit: OwnedSemaphorePermit,
    full: &FullName,
    request: GitHttpRequest,
) -> Result<GitHttpResponse, ScmError> {
    let repository = root.join(&full.owner).join(format!("{}.git", full.name));
    if !repository.is_dir() {
        return Err(ScmError::NotFound);
    }
    let Some(encoding) = Encoding::parse(request.content_encoding.as_deref()) else {
        return Ok(plain(415, "the request's Content-Encoding is not one Git sends (gzip)"));
    };
    let bounds = PushBounds { max_refs: limits.max_refs_per_push, max_objects: limits.max_objects_per_push };
    let pushing = request.service == Service::ReceivePack;
    let mut max_pack = limits.max_request_bytes;
    if pushing {
        let refusal = match request.refusal.clone() {
            Some(reason) => Some(reason),
            None => {
                let used = account_usage(root.join(&full.owner)).await?;
                max_pack = max_pack.min(limits.max_account_bytes.saturating_sub(used));
                (used >= limits.max_account_bytes).then(|| {
                    format!(
                        "the account's repositories use {used} bytes, the most this host keeps for an account is {}: \
                         delete some before pushing",
                        limits.max_account_bytes
                    )
                })
            }
        };
        if let Some(reason) = refusal {
            if request.advertisement {
                return Ok(receive::refused_advertisement(&reason));
            }
            let mut body = BufReader::new(Body::new(request.body, encoding, limits.max_request_bytes));
            let head = match receive::admit(&mut body, None::<&mut tokio::io::Sink>, bounds).await {
                Ok(Admission::Admitted(head) | Admission::Refused(head, _)) => head,
                Err(_) => receive::Head::default(),
            };
            body.into_inner().drain().await;
            return Ok(receive::refused_push(&head, &reason));
        }
    }
    let mut child = command(root, full, &request, max_pack)
        .spawn()
        .map_err(|e| ScmError::Failed(format!("starting git http-backend: {e}")))?;
    let (Some(mut stdin), Some(stdout), Some(mut stderr)) =
        (child.stdin.take(), child.stdout.take(), child.stderr.take())
    else {
        return Err(ScmError::Failed("git http-backend without its pipes".into()));
    };
    let (commands_tx, commands_rx) = oneshot::channel::<Vec<receive::Command>>();
    let (moved_tx, moved_rx) = oneshot::channel();
    let (exited_tx, exited) = oneshot::channel::<()>();
    let label = full.to_string();
    let path = repository.clone();
    tokio::spawn(async move {
        let mut errors = Vec::new();
        let _ = (&mut stderr).take(4096).read_to_end(&mut errors).await;
        // The rest is dropped, never left in the pipe: a program blocked on
        // a full pipe would hold its permit for ever.
        let _ = tokio::io::copy(&mut stderr, &mut tokio::io::sink()).await;
        let exit = child.wait().await;
        if !errors.is_empty() {
            tracing::debug!(repository = %label, stderr = %String::from_utf8_lossy(&errors), "git http-backend");
        }
        if let (Ok(_), Ok(commands)) = (exit, commands_rx.await) {
            let _ = moved_tx.send(moves(path, commands).await);
        }
        drop(permit);
        let _ = exited_tx.send(());
    });
    let body = Body::new(request.body, encoding, limits.max_request_bytes);
    let exchanging_push = pushing && !request.advertisement;
    if exchanging_push {
        let mut body = BufReader::new(body);
        match receive::admit(&mut body, Some(&mut stdin), bounds).await {
            Err(e) => return Err(ScmError::Failed(format!("passing a push to git http-backend: {e}"))),
            Ok(Admission::Refused(head, reason)) => {
                // receive-pack sees its input end before it acted, and stops.
                drop((stdin, stdout));
                body.into_inner().drain().await;
                return Ok(receive::refused_push(&head, &reason));
            }
            Ok(Admission::Admitted(head)) => {
                let _ = commands_tx.send(head.commands);
                body.get_mut().allow(limits.max_request_bytes.saturating_add(CUT_SLACK));
                tokio::spawn(copy(body, stdin, full.to_string()));
            }
        }
    } else {
        tokio::spawn(copy(body, stdin, full.to_string()));
    }
    let mut stdout = BufReader::new(stdout);
    let (status, headers) = read_headers(&mut stdout).await?;
    let moved = exchanging_push.then_some(moved_rx);
    Ok(GitHttpResponse { status, headers, body: until(stdout, exited), moved })
}

/// `git http-backend` for `request`, a pack at most `max_pack` bytes.
fn command(root: &Path, full: &FullName, request: &GitHttpRequest, max_pack: u64) -> Command {
    let (method, path, query) = if request.advertisement {
        ("GET", "info/refs".to_owned(), format!("service={}", request.service.as_str()))
    } else {
        ("POST", request.service.as_str().to_owned(), String::new())
    };
    let config = [
        ("core.hooksPath", "/nonexistent/play-no-hooks".to_owned()),
        ("receive.fsckObjects", "true".to_owned()),
        ("http.receivepack", request.remote_user.is_some().to_string()),
        // Never 0, which Git reads as "no bound": a push with no room
        // left is refused before the program runs.
        ("receive.maxInputSize", max_pack.max(1).to_string()),
        // Options would come between the commands and the pack, where
        // `crate::receive` reads the pack header.
        ("receive.advertisePushOptions", "false".to_owned()),
    ];
    let mut command = Command::new("git");
    command
        .arg("http-backend")
        .env_clear()
        .env("PATH", std::env::var_os("PATH").unwrap_or_default())
        .env("GIT_PROJECT_ROOT", root)
        .env("GIT_HTTP_EXPORT_ALL", "1")
        .env("GIT_CONFIG_NOSYSTEM", "1")
        .env("GIT_CONFIG_GLOBAL", "/dev/null")
        .env("HOME", "/nonexistent")
        .env("GIT_CONFIG_COUNT", config.len().to_string());
    for (i, (key, value)) in config.iter().enumerate() {
        command.env(format!("GIT_CONFIG_KEY_{i}"), key).env(format!("GIT_CONFIG_VALUE_{i}"), value);
    }
    command
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
    if let Some(user) = &request.remote_user {
        command.env("REMOTE_USER", user);
    }
    command
}

/// Streams the (rest of the) body to the program; past the bound, or when
/// the client stops, its input ends there and it fails on its own.
async fn copy(mut body: impl tokio::io::AsyncRead + Unpin, mut stdin: tokio::process::ChildStdin, label: String) {
    if let Err(e) = tokio::io::copy(&mut body, &mut stdin).await
        && let Some(failure) = BodyError::of(&e)
    {
        tracing::info!(repository = %label, error = %failure, "git request cut");
    }
}

/// The program's output, ending once `exited` fires (the program exited
/// and its permit is back).
fn until(stdout: BufReader<ChildStdout>, exited: oneshot::Receiver<()>) -> ByteReader {
    let end = futures::stream::once(exited).filter_map(|_| futures::future::ready(None));
    Box::new(StreamReader::new(ReaderStream::new(stdout).chain(end)))
}

/// A short answer of play's own (not the program's).
pub(crate) fn plain(status: u16, text: &str) -> GitHttpResponse {
    GitHttpResponse {
        status,
        headers: vec![("Content-Type".into(), "text/plain; charset=utf-8".into())],
        body: Box::new(std::io::Cursor::new(format!("{text}\n").into_bytes())),
        moved: None,
    }
}

async fn account_usage(folder: PathBuf) -> Result<u64, ScmError> {
    tokio::task::spawn_blocking(move || usage(&folder))
        .await
        .map_err(|e| ScmError::Failed(format!("measuring the account's repositories: {e}")))?
        .map_err(|e| ScmError::Failed(format!("measuring the account's repositories: {e}")))
}

/// The CGI headers: `Status:` (200 when absent) and the rest.
async fn read_headers(stdout: &mut BufReader<ChildStdout>) -> Result<(u16, Vec<(String, String)>), ScmError> {
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

/// The branches a push moved: of its commands on `refs/heads/`, those
/// whose ref now holds what the command asked (receive-pack moves a ref
/// only from the command's old value, so `old` is exact).
async fn moves(path: PathBuf, commands: Vec<receive::Command>) -> Vec<BranchMove> {
    let read = tokio::task::spawn_blocking(move || {
        let repo = Repository::open_bare(&path).map_err(|e| e.message().to_owned())?;
        let moved = commands
            .into_iter()
            .filter(|c| c.old != c.new)
            .filter_map(|c| {
                let branch = c.name.strip_prefix("refs/heads/")?.to_owned();
                let now = repo.find_reference(&c.name).ok().and_then(|r| r.target()).map(|oid| oid.to_string());
                let new = (!c.deletes()).then(|| c.new.clone());
                (now == new).then(|| BranchMove { branch, old: (!c.creates()).then(|| c.old.clone()), new })
            })
            .collect::<Vec<_>>();
        Ok::<_, String>(moved)
    })
    .await;
    match read {
        Ok(Ok(moved)) => moved,
        Ok(Err(e)) => {
            tracing::warn!(error = %e, "reading what a push moved");
            Vec::new()
        }
        Err(e) => {
            tracing::warn!(error = %e, "reading what a push moved");
            Vec::new()
        }
    }
}
